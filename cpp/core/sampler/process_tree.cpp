#include "core/sampler/process_tree.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/sampler/proc_stat.hpp"

namespace loadbench::sampler {

ProcessTreeScanner::ProcessTreeScanner() : proc_(open_directory(AT_FDCWD, "/proc")) {
    if (!proc_.is_open()) throw std::runtime_error(std::string("cannot open /proc: ") + std::strerror(errno));
}

void ProcessTreeScanner::scan(int root, std::vector<int>& members, std::vector<char>& dir_buffer,
                              std::vector<char>& file_buffer) {
    listed_.clear();
    for_each_entry(proc_, dir_buffer, [&](std::string_view name) {
        if (const int pid = parse_pid_name(name)) listed_.push_back(pid);
    });

    // Forget pids that are gone, learn the parent of pids never seen.
    std::sort(listed_.begin(), listed_.end());
    for (auto it = parent_of_.begin(); it != parent_of_.end();) {
        if (std::binary_search(listed_.begin(), listed_.end(), it->first))
            ++it;
        else
            it = parent_of_.erase(it);
    }
    listed_parents_.resize(listed_.size());
    for (std::size_t i = 0; i < listed_.size(); ++i) {
        const int pid = listed_[i];
        auto known = parent_of_.find(pid);
        if (known == parent_of_.end()) {
            char path[32];
            std::snprintf(path, sizeof path, "%d/stat", pid);
            const FileDescriptor stat_file = open_read_only(proc_.get(), path);
            const ReadResult read = read_whole(stat_file, file_buffer);
            const auto stat = read.ok ? parse_proc_stat(read.text) : std::nullopt;
            const int ppid = stat ? stat->ppid : 0;  // gone already: belongs to nobody
            known = parent_of_.emplace(pid, ppid).first;
        }
        listed_parents_[i] = known->second;
    }

    // Grow the member set from the root until no listed process joins (one pass per level).
    members.clear();
    if (!std::binary_search(listed_.begin(), listed_.end(), root)) return;
    members.push_back(root);
    for (bool grew = true; grew;) {
        grew = false;
        for (std::size_t i = 0; i < listed_.size(); ++i) {
            const int pid = listed_[i];
            if (pid == root || std::find(members.begin(), members.end(), pid) != members.end()) continue;
            if (std::find(members.begin(), members.end(), listed_parents_[i]) != members.end()) {
                members.push_back(pid);
                grew = true;
            }
        }
    }
}

}  // namespace loadbench::sampler
