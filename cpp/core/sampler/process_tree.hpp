#pragma once
// Finds a process and all its descendants (nginx master + workers, gunicorn, node cluster)
// from the parent pid field of /proc/<pid>/stat. /proc is re-listed on every scan, so
// processes that come and go are noticed within one sample.
//
// Cost: one getdents64 pass over /proc per scan; /proc/<pid>/stat is read only for a pid not
// seen before (a process's parent changes only when that parent dies, and then it is
// re-parented to init or a subreaper, out of the tree). The sampler re-reads the stat of
// every member anyway and reports their current parents through note_parent().
#include <unordered_map>
#include <vector>

#include "core/sampler/proc_file.hpp"

namespace loadbench::sampler {

class ProcessTreeScanner {
public:
    ProcessTreeScanner();  // throws std::runtime_error when /proc cannot be opened

    // Fills `members` with `root` (if it is listed) and every listed process whose chain of
    // parents reaches it, in no particular order.
    void scan(int root, std::vector<int>& members, std::vector<char>& dir_buffer, std::vector<char>& file_buffer);

    // A member's parent as just read from its stat (it may have been re-parented).
    void note_parent(int pid, int ppid) { parent_of_[pid] = ppid; }

private:
    FileDescriptor proc_;
    std::unordered_map<int, int> parent_of_;  // every listed pid -> its parent pid
    std::vector<int> listed_;
    std::vector<int> listed_parents_;
};

}  // namespace loadbench::sampler
