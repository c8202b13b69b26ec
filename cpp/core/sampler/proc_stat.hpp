#pragma once
// /proc/<pid>/stat: CPU times, parent, thread count, start time.
//
// The command name (field 2) is the executable's name in parentheses and may itself hold
// spaces and parentheses - "a (b) c" gives "(a (b) c)". Splitting the line on spaces breaks
// on such names, so the parser takes the name up to the LAST ')' and counts fields after it.
#include <cstdint>
#include <optional>
#include <string_view>

namespace loadbench::sampler {

struct ProcStat {
    int pid = 0;
    std::string_view comm;  // without the parentheses; a view into the parsed text
    char state = '?';       // R, S, D, Z (zombie), X (dead), T, t, I, ...
    int ppid = 0;
    std::uint64_t flags = 0;        // PF_* flags; PF_KTHREAD marks kernel threads
    std::uint64_t utime_ticks = 0;  // all threads, live and exited, in clock ticks
    std::uint64_t stime_ticks = 0;
    std::int64_t cutime_ticks = 0;  // waited-for children
    std::int64_t cstime_ticks = 0;
    std::int64_t num_threads = 0;
    std::uint64_t starttime_ticks = 0;  // since boot: with the pid, identifies a process
    std::int64_t rss_pages = 0;

    bool is_kernel_thread() const { return (flags & 0x00200000u) != 0; }  // PF_KTHREAD
    bool has_exited() const { return state == 'Z' || state == 'X' || state == 'x'; }
};

// Parses the text of /proc/<pid>/stat; nullopt when it is malformed.
std::optional<ProcStat> parse_proc_stat(std::string_view text);

}  // namespace loadbench::sampler
