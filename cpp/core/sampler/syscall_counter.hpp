#pragma once
// System calls of a process tree, counted by the kernel: perf_event_open(2) in counting mode
// (no sampling, no ring buffer) on the tracepoint raw_syscalls:sys_enter, one counter per
// thread (pid = tid, cpu = -1). Each counter has inherit=1, so a thread or process that a
// counted thread creates later is counted too, in its creator's counter: reading a counter
// sums its live inherited children and the final counts of those that exited. With
// follow_processes=false (the sampler's tree=false) only threads inherit (inherit_thread), so
// a forked child is not counted - as its CPU is not.
//
// Counting costs the kernel one tracepoint hit per system call of a counted thread; while any
// raw_syscalls tracepoint is enabled, every thread of the machine takes the slow syscall entry.
//
// Where the kernel refuses (no tracefs, perf_event_paranoid without CAP_PERFMON, a seccomp
// filter in a container, no perf events at all) there is no number: available() is false and
// why() says why, in one sentence. A partial count is never returned as a total: a member
// process that cannot be counted makes the whole count unavailable.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/sampler/proc_file.hpp"

namespace loadbench::sampler {

// Where the tracepoint's id is read from, first found wins (tracefs, then its old debugfs path).
extern const char* const kSysEnterIdPaths[2];

class SyscallCounter {
public:
    // `id_file`: read the tracepoint id from this file instead of kSysEnterIdPaths (a test or
    // a diagnosis points it at something unreadable to see the refusal path). Nothing is
    // opened until add_process().
    explicit SyscallCounter(bool follow_processes, const std::string& id_file = "");
    SyscallCounter(const SyscallCounter&) = delete;
    SyscallCounter& operator=(const SyscallCounter&) = delete;

    bool available() const { return why_.empty(); }
    const std::string& why() const { return why_; }

    // Counts process `pid` (started at `start_ticks`, /proc/<pid>/stat field 22, a child of
    // `parent_pid`) from now on, unless a counter already sees it by inheritance: it started
    // after its parent (or, when the parent is not counted here, the first process added) was
    // counted. One started before is not a descendant of a counted thread: it gets counters
    // of its own now, and the system calls it made before are missed.
    void add_process(int pid, int parent_pid, std::uint64_t start_ticks);

    // The sum of every counter: system calls since each was opened. nullopt when unavailable.
    std::optional<std::uint64_t> read();

    std::size_t counters() const { return counters_.size(); }

private:
    bool open_thread(int tid);
    void refuse(std::string why);

    const bool follow_processes_;
    std::string why_;
    std::uint64_t tracepoint_id_ = 0;
    std::vector<FileDescriptor> counters_;
    // Counted processes -> the boot-time tick from which every thread they create is counted.
    std::unordered_map<int, std::uint64_t> counted_since_;
    std::uint64_t first_counted_since_ = 0;
    std::vector<char> dir_buffer_;
};

// The boot-time clock in the ticks of /proc/<pid>/stat's start time (rounded down).
std::uint64_t boot_time_ticks();

}  // namespace loadbench::sampler
