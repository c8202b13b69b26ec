#pragma once
// CPU time of a whole cgroup, read from its own accounting: every process that ever ran in it
// (children that forked and exited between two readings included), in nanoseconds.
//
// cgroup v2: <dir>/cpu.stat (usage_usec, user_usec, system_usec - always present, with or
// without the cpu controller). cgroup v1: <dir>/cpuacct.usage (ns) with cpuacct.usage_user and
// cpuacct.usage_sys. Which one a directory is, is told by the files it holds.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/sampler/proc_file.hpp"

namespace loadbench::sampler {

struct CgroupCpuUsage {
    std::uint64_t usage_ns = 0;
    std::uint64_t user_ns = 0;
    std::uint64_t system_ns = 0;
};

// Parses the text of a cgroup v2 cpu.stat file; nullopt without a usage_usec line.
std::optional<CgroupCpuUsage> parse_cgroup_cpu_stat(std::string_view text);

class CgroupCpu {
public:
    // Opens the accounting files of the cgroup directory `dir`; on failure returns false and
    // sets `why` to one clear sentence.
    bool open(const std::string& dir, std::string& why);
    bool is_open() const { return version_ != 0; }
    int version() const { return version_; }  // 2 or 1; 0 = not open
    const std::string& dir() const { return dir_; }

    // The cgroup's CPU usage now; nullopt when it can no longer be read (removed).
    std::optional<CgroupCpuUsage> read(std::vector<char>& buffer) const;

private:
    std::string dir_;
    int version_ = 0;
    FileDescriptor stat_;    // v2 cpu.stat | v1 cpuacct.usage
    FileDescriptor user_;    // v1 cpuacct.usage_user
    FileDescriptor system_;  // v1 cpuacct.usage_sys
};

}  // namespace loadbench::sampler
