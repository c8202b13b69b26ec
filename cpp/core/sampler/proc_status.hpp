#pragma once
// /proc/<pid>/status (and /proc/<pid>/task/<tid>/status): memory and context switches.
//
// VmRSS / VmHWM are the whole process's (one address space); the context-switch counters
// are the one thread's only, so a process total sums task/<tid>/status over its threads.
#include <cstdint>
#include <string_view>

namespace loadbench::sampler {

struct ProcStatus {
    int tgid = 0;                  // the process a thread belongs to
    std::uint64_t vm_rss_kib = 0;  // resident set now
    std::uint64_t vm_hwm_kib = 0;  // peak resident set ("high water mark")
    bool has_memory = false;       // false for zombies and kernel threads (no VmRSS line)
    std::uint64_t voluntary_ctxt_switches = 0;
    std::uint64_t nonvoluntary_ctxt_switches = 0;
    bool has_ctxt_switches = false;
};

ProcStatus parse_proc_status(std::string_view text);

}  // namespace loadbench::sampler
