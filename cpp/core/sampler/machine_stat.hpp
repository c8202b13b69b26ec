#pragma once
// Machine-wide counters: the "cpu" line of /proc/stat (how busy and how noisy the machine
// was - steal is CPU time a hypervisor gave to another guest) and /proc/loadavg.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/sampler/proc_file.hpp"

namespace loadbench::sampler {

// Clock ticks summed over all CPUs since boot.
struct MachineCpuTicks {
    std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    // guest time is already included in user/nice, so it is not part of the total.
    std::uint64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};

struct MachineCounters {
    MachineCpuTicks cpu;
    double loadavg_1m = 0.0;
    // The pid most recently allocated on the machine (last field of /proc/loadavg; threads
    // take pids too). Unchanged between two reads: no process or thread was created.
    int last_pid = 0;
};

// Parses the aggregate "cpu  ..." first line of /proc/stat.
std::optional<MachineCpuTicks> parse_machine_cpu_line(std::string_view proc_stat_text);
// Parses the 1-minute load average, the first field of /proc/loadavg.
std::optional<double> parse_loadavg_1m(std::string_view loadavg_text);
// Parses the last allocated pid, the last field of /proc/loadavg.
std::optional<int> parse_loadavg_last_pid(std::string_view loadavg_text);

// Keeps /proc/stat and /proc/loadavg open and re-reads them.
class MachineReader {
public:
    MachineReader();
    // Throws std::runtime_error when /proc is not readable.
    MachineCounters read(std::vector<char>& buffer) const;

private:
    FileDescriptor stat_;
    FileDescriptor loadavg_;
};

}  // namespace loadbench::sampler
