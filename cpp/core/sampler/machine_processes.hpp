#pragma once
// Every process on the machine and the CPU it has used: what "other processes" means when a
// measured window is judged contended.
//
// The machine's busy time in /proc/stat cannot answer that question here. It is sampled by the
// tick (user/system/softirq jiffies, a few % of a 1 s window by sampling alone), while idle time
// is the precise nohz sleep time, so the columns do not add up to the wall time, and busy as a
// share of their sum minus the processes' precise CPU read as 5-8 % "outside CPU" on a quiet
// 2-core machine (bench/contention_accounting.py). Summing the CPU of each process that is not
// the run's names real competitors only: a busy loop, a build (its compilers reaped by make
// show in make's cutime), a browser.
#include <cstdint>
#include <string>
#include <vector>

namespace loadbench::sampler {

struct ProcessCpu {
    int pid = 0;
    int ppid = 0;                   // the parent: a child reaped during a window moves its CPU into the parent's
    std::uint64_t start_ticks = 0;  // with the pid, identifies the process across readings
    // Own CPU (the process's CPU clock: every thread, live and exited, in ns; ticks where the
    // kernel gives no clock) plus that of the children it reaped (cutime + cstime).
    std::uint64_t cpu_ns = 0;
    std::string comm;  // the command name, to say who competed
    bool kernel_thread = false;
};

// Reads every process in /proc (zombies too, with their final counters), kernel threads marked (on a benchmark's
// loopback they mostly do its own work: softirq packets that spill over to ksoftirqd, RCU frees of closed sockets).
// Processes that exit during the scan are skipped. `buffer` is reused for the stat files.
std::vector<ProcessCpu> read_machine_processes(std::vector<char>& buffer);

}  // namespace loadbench::sampler
