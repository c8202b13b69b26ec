#pragma once
// One sampled process: its /proc files held open and its latest readings.
//
// Readings are kept when the process exits, so the last sample survives the exit. The
// context-switch counters of /proc/<pid>/status are the main thread's only; the process
// figure sums task/<tid>/status over all threads and keeps the last counts of threads that
// have exited, so the total never drops.
//
// CPU: the process's own CPU clock (clock_getcpuclockid: the scheduler's sum_exec_runtime of
// every thread, live and exited, in ns) where the kernel gives it, else utime+stime in ticks;
// beside it the CPU of its children that it has reaped (cutime/cstime, ticks).
#include <time.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/sampler/proc_file.hpp"

namespace loadbench::sampler {

struct ProcessReadings {
    std::uint64_t utime_ticks = 0;
    std::uint64_t stime_ticks = 0;
    std::uint64_t rss_kib = 0;
    std::uint64_t rss_peak_kib = 0;
    std::uint64_t fds = 0;
    std::uint64_t threads = 0;
    std::uint64_t ctx_voluntary = 0;
    std::uint64_t ctx_involuntary = 0;
    std::uint64_t cpu_ns = 0;        // own CPU, all threads (clock, or ticks converted)
    std::uint64_t cutime_ticks = 0;  // reaped children (and theirs)
    std::uint64_t cstime_ticks = 0;
};

enum class ProcessState { alive, zombie, gone };

class TrackedProcess {
public:
    // Opens /proc/<pid>. On failure returns false and sets `why` to one clear sentence.
    bool open(int pid, std::string& why, std::vector<char>& file_buffer);

    // Re-reads everything. A zombie's CPU counters (final) are read, its memory, fds and
    // threads stay those of the last read of the live process; once gone (reaped) nothing is
    // read any more.
    ProcessState refresh(std::vector<char>& file_buffer, std::vector<char>& dir_buffer);
    // Re-reads only the CPU counters (own and reaped children's).
    ProcessState refresh_cpu(std::vector<char>& file_buffer);
    // Proportional set size (/proc/<pid>/smaps_rollup "Pss:", kB): shared pages divided among
    // the processes that map them. nullopt when unreadable (gone, or an old kernel).
    std::optional<std::uint64_t> read_pss_kib(std::vector<char>& file_buffer);

    // True while the own CPU comes from the ns CPU clock rather than ticks.
    bool cpu_in_ns() const { return has_clock_; }
    int pid() const { return pid_; }
    int parent_pid() const { return ppid_; }
    // Boot-time ticks when it started (/proc/<pid>/stat field 22): with the pid, who it is.
    std::uint64_t start_ticks() const { return start_ticks_; }
    const ProcessReadings& readings() const { return readings_; }

private:
    struct Task {
        int tid = 0;
        FileDescriptor status;
        std::uint64_t ctx_voluntary = 0;
        std::uint64_t ctx_involuntary = 0;
        bool listed = false;
    };

    ProcessState read_stat(std::vector<char>& file_buffer);
    void read_tasks(std::vector<char>& file_buffer, std::vector<char>& dir_buffer, std::uint64_t main_voluntary,
                    std::uint64_t main_involuntary);

    int pid_ = 0;
    int ppid_ = 0;
    std::uint64_t start_ticks_ = 0;
    FileDescriptor dir_;
    FileDescriptor stat_;
    FileDescriptor status_;
    FileDescriptor fd_dir_;
    FileDescriptor task_dir_;
    FileDescriptor smaps_rollup_;
    clockid_t cpu_clock_{};
    bool has_clock_ = false;
    std::vector<Task> tasks_;
    std::uint64_t exited_tasks_voluntary_ = 0;
    std::uint64_t exited_tasks_involuntary_ = 0;
    ProcessReadings readings_;
};

}  // namespace loadbench::sampler
