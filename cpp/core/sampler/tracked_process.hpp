#pragma once
// One sampled process: its /proc files held open and its latest readings.
//
// Readings are kept when the process exits, so the last sample survives the exit. The
// context-switch counters of /proc/<pid>/status are the main thread's only; the process
// figure sums task/<tid>/status over all threads and keeps the last counts of threads that
// have exited, so the total never drops.
#include <cstdint>
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
};

class TrackedProcess {
public:
    // Opens /proc/<pid>. On failure returns false and sets `why` to one clear sentence.
    bool open(int pid, std::string& why, std::vector<char>& file_buffer);

    // Re-reads everything. Returns false once the process has exited (or become a zombie);
    // the readings then stay those of the last successful read, except that the CPU time of
    // a zombie, which is final, is taken when it is readable.
    bool refresh(std::vector<char>& file_buffer, std::vector<char>& dir_buffer);

    int pid() const { return pid_; }
    int parent_pid() const { return ppid_; }
    const ProcessReadings& readings() const { return readings_; }

private:
    struct Task {
        int tid = 0;
        FileDescriptor status;
        std::uint64_t ctx_voluntary = 0;
        std::uint64_t ctx_involuntary = 0;
        bool listed = false;
    };

    bool read_stat(std::vector<char>& file_buffer, bool& exited);
    void read_tasks(std::vector<char>& file_buffer, std::vector<char>& dir_buffer, std::uint64_t main_voluntary,
                    std::uint64_t main_involuntary);

    int pid_ = 0;
    int ppid_ = 0;
    FileDescriptor dir_;
    FileDescriptor stat_;
    FileDescriptor status_;
    FileDescriptor fd_dir_;
    FileDescriptor task_dir_;
    std::vector<Task> tasks_;
    std::uint64_t exited_tasks_voluntary_ = 0;
    std::uint64_t exited_tasks_involuntary_ = 0;
    ProcessReadings readings_;
};

}  // namespace loadbench::sampler
