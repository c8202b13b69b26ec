#pragma once
// The sampler: a process (optionally with all its descendants) and the machine, read from
// /proc. snapshot() reads everything synchronously - that is what a run takes exactly at the
// start and end of its measured window; start() runs a background thread that appends one
// sample per interval to a time series in between.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/sampler/machine_stat.hpp"
#include "core/sampler/process_tree.hpp"
#include "core/sampler/tracked_process.hpp"

namespace loadbench::sampler {

struct Sample {
    double t = 0.0;              // CLOCK_MONOTONIC seconds (Python's time.monotonic())
    ProcessReadings process;     // summed over the tree; CPU and ctx counters include members that left
    std::uint32_t processes = 0; // live members
    bool exited = false;         // the root process has exited: process readings are its last
    MachineCounters machine;
};

struct Snapshot : Sample {
    std::vector<int> pids;  // live members, root first
};

// Clock ticks per second of the utime/stime/machine counters (sysconf(_SC_CLK_TCK)).
double clock_ticks_per_second();

class Sampler {
public:
    // Throws std::invalid_argument with one clear sentence for an invalid, nonexistent,
    // foreign, kernel-thread or already-exited pid.
    Sampler(int pid, bool tree);
    ~Sampler();
    Sampler(const Sampler&) = delete;
    Sampler& operator=(const Sampler&) = delete;

    Snapshot snapshot();

    // Starts the background series (one sample now, then one per interval). Throws
    // std::logic_error when already running, std::invalid_argument for interval <= 0.
    void start(double interval_s);
    // Stops and joins the thread; the series stays. Idempotent.
    void stop();
    bool running() const { return thread_.joinable(); }

    std::vector<Sample> series() const;
    std::optional<double> exit_time() const;  // monotonic time the exit was first seen
    double sampling_thread_cpu_s() const { return sampling_thread_cpu_s_.load(); }
    // How many readings re-listed /proc to discover the tree (the costly part of a sample).
    std::uint64_t proc_listings() const { return proc_listings_.load(); }

    int pid() const { return root_pid_; }
    bool tree() const { return tree_; }

private:
    Sample read_locked(std::vector<int>* pids);
    void discover_members_locked(int last_pid);
    ProcessReadings sum_members_locked(std::uint32_t& live) const;
    void run(double interval_s);

    const int root_pid_;
    const bool tree_;

    mutable std::mutex read_mutex_;  // guards everything below up to series_mutex_
    std::vector<std::unique_ptr<TrackedProcess>> members_;  // root first
    std::unique_ptr<ProcessTreeScanner> scanner_;
    MachineReader machine_;
    std::vector<char> file_buffer_;
    std::vector<char> dir_buffer_;
    std::vector<int> scanned_;
    int last_pid_at_scan_ = 0;  // /proc/loadavg's last pid when /proc was last listed
    ProcessReadings departed_;       // CPU and ctx counts of members that left the tree
    std::uint64_t rss_peak_floor_ = 0;  // the tree's peak never drops when a member leaves
    bool exited_ = false;
    double exit_t_ = 0.0;
    Sample final_;  // the last sample of an exited root

    mutable std::mutex series_mutex_;
    std::vector<Sample> series_;

    std::thread thread_;
    std::mutex stop_mutex_;
    std::condition_variable stop_signal_;
    bool stop_requested_ = false;
    std::atomic<double> sampling_thread_cpu_s_{0.0};
    std::atomic<std::uint64_t> proc_listings_{0};
};

}  // namespace loadbench::sampler
