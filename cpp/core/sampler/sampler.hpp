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
#include <string>
#include <thread>
#include <vector>

#include "core/sampler/allocation_counts.hpp"
#include "core/sampler/cgroup_cpu.hpp"
#include "core/sampler/machine_stat.hpp"
#include "core/sampler/process_tree.hpp"
#include "core/sampler/syscall_counter.hpp"
#include "core/sampler/tracked_process.hpp"

namespace loadbench::sampler {

// Where a sample's tree CPU comes from, best first.
enum class CpuSource {
    cgroup_v2,   // the server's own cgroup: cpu.stat usage_usec (every process that ever ran in it)
    cgroup_v1,   // the same from cpuacct.usage (ns)
    proc_clock,  // per process CPU clocks (ns) + reaped children's cutime/cstime (ticks)
    proc_ticks,  // utime/stime (ticks) + reaped children's cutime/cstime (ticks)
};
const char* cpu_source_name(CpuSource source);

struct Sample {
    double t = 0.0;  // CLOCK_MONOTONIC seconds (Python's time.monotonic())
    // Summed over the tree: gauges over live members; utime/stime ticks and ctx counters include
    // members that left and the children members reaped (cutime/cstime).
    ProcessReadings process;
    // The tree's CPU in ns from the best source (see cpu_source): total and its user/system split.
    std::uint64_t cpu_ns = 0;
    std::uint64_t user_ns = 0;
    std::uint64_t system_ns = 0;
    CpuSource cpu_source = CpuSource::proc_ticks;
    // The largest summed RSS of all readings (background ones too) since the previous
    // snapshot(), this one included: the peak of the tree's memory as sampled in between.
    std::uint64_t rss_max_kib = 0;
    std::int64_t pss_kib = -1;    // snapshot() only: summed Pss of live members; -1 = unavailable
    std::uint32_t processes = 0;  // live members
    // System calls the tree made since its counters were opened (syscall_counter.hpp), read
    // right after the CPU; nullopt where the kernel refused (Sampler::syscalls_na says why).
    std::optional<std::uint64_t> syscalls;
    bool exited = false;  // the root process has exited: process readings are its last
    MachineCounters machine;
};

struct Snapshot : Sample {
    std::vector<int> pids;  // live members, root first
    // The allocation counter's sums over the tree (a sampler given its directory only).
    std::optional<AllocationTotals> allocations;
    std::string syscalls_na;  // why `syscalls` is empty, as of this snapshot
};

// Clock ticks per second of the utime/stime/machine counters (sysconf(_SC_CLK_TCK)).
double clock_ticks_per_second();

class Sampler {
public:
    // Throws std::invalid_argument with one clear sentence for an invalid, nonexistent,
    // foreign, kernel-thread or already-exited pid. `cgroup_dir`, when not empty, is a cgroup
    // (v2 or v1 cpuacct) holding exactly the tree of `pid`: its CPU accounting is then the
    // tree's CPU (std::invalid_argument when it cannot be read). `allocation_dir`, when not
    // empty, is the allocation counter's directory of the tree (allocation_page.hpp): each
    // snapshot() then sums its pages too. `count_syscalls`: count the tree's system calls
    // (syscall_counter.hpp), the tracepoint id read from `syscall_id_file` when not empty.
    Sampler(int pid, bool tree, const std::string& cgroup_dir = "", const std::string& allocation_dir = "",
            bool count_syscalls = true, const std::string& syscall_id_file = "");
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

    // Why the tree's system calls are not counted (empty while they are).
    std::string syscalls_na() const;

    int pid() const { return root_pid_; }
    bool tree() const { return tree_; }
    const std::string& cgroup_dir() const { return cgroup_.dir(); }
    const std::string& allocation_dir() const { return allocation_dir_; }

private:
    struct Member {
        std::unique_ptr<TrackedProcess> process;
        bool zombie = false;  // exited, not yet reaped: its CPU counters are final
    };

    Sample read_locked(std::vector<int>* pids, bool with_pss);
    void discover_members_locked(int last_pid);
    void order_members_locked();
    // A member is no longer in the tree: reaped by a member (its CPU moved into that member's
    // cutime/cstime, so it is not counted again) or left alive (its counters are frozen).
    void depart_locked(std::size_t index, bool reaped_by_member);
    void read_members_locked(bool& root_exited);
    Sample sum_members_locked() const;
    std::string syscalls_na_locked() const;
    void run(double interval_s);

    const int root_pid_;
    const bool tree_;
    const std::string allocation_dir_;

    mutable std::mutex read_mutex_;  // guards everything below up to series_mutex_
    std::vector<Member> members_;    // root first, every parent before its children
    CgroupCpu cgroup_;
    std::unique_ptr<SyscallCounter> syscalls_;  // null: not asked for
    std::unique_ptr<ProcessTreeScanner> scanner_;
    MachineReader machine_;
    std::vector<char> file_buffer_;
    std::vector<char> dir_buffer_;
    std::vector<int> scanned_;
    int last_pid_at_scan_ = 0;          // /proc/loadavg's last pid when /proc was last listed
    ProcessReadings departed_;          // CPU and ctx counts of members that left the tree
    std::uint64_t rss_peak_floor_ = 0;  // the tree's peak never drops when a member leaves
    std::uint64_t rss_max_since_snapshot_ = 0;
    std::uint64_t cpu_floor_ns_ = 0;  // /proc tree CPU as last reported
    bool exited_ = false;
    double exit_t_ = 0.0;
    Sample final_;                 // the last sample of an exited root
    CgroupCpuUsage final_cgroup_;  // the cgroup's last reading

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
