#include "core/sampler/machine_processes.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>

#include "core/sampler/proc_file.hpp"
#include "core/sampler/proc_stat.hpp"

namespace loadbench::sampler {

std::vector<ProcessCpu> read_machine_processes(std::vector<char>& buffer) {
    std::vector<ProcessCpu> out;
    const FileDescriptor proc = open_directory(AT_FDCWD, "/proc");
    if (!proc.is_open()) return out;
    std::vector<int> pids;
    std::vector<char> dir_buffer(32768);
    for_each_entry(proc, dir_buffer, [&](std::string_view name) {
        if (const int pid = parse_pid_name(name)) pids.push_back(pid);
    });
    static const std::uint64_t tick_ns = 1000000000ull / static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
    out.reserve(pids.size());
    for (const int pid : pids) {
        // The clock first, the stat file after: a stat read that succeeds proves the pid still
        // named this process (not yet reaped, so not reused) when the clock was read.
        clockid_t clock{};
        timespec now{};
        const bool clock_ok = ::clock_getcpuclockid(pid, &clock) == 0 && ::clock_gettime(clock, &now) == 0;
        char path[32];
        std::snprintf(path, sizeof path, "%d/stat", pid);
        const FileDescriptor file = open_read_only(proc.get(), path);
        const ReadResult read = read_whole(file, buffer);
        const auto stat = read.ok ? parse_proc_stat(read.text) : std::nullopt;
        // A zombie is kept: its counters are final, and the window that sees its parent reap it
        // must know what it had used already (else the parent's cutime jump counts it twice).
        if (!stat || stat->state == 'X' || stat->state == 'x') continue;
        const std::uint64_t own =
            clock_ok && !stat->has_exited()
                ? static_cast<std::uint64_t>(now.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(now.tv_nsec)
                : (stat->utime_ticks + stat->stime_ticks) * tick_ns;
        const auto reaped = static_cast<std::uint64_t>(stat->cutime_ticks + stat->cstime_ticks);
        out.push_back(ProcessCpu{pid, stat->ppid, stat->starttime_ticks, own + reaped * tick_ns,
                                 std::string(stat->comm), stat->is_kernel_thread()});
    }
    return out;
}

}  // namespace loadbench::sampler
