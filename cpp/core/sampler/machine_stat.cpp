#include "core/sampler/machine_stat.hpp"

#include <fcntl.h>

#include <charconv>
#include <cstring>
#include <stdexcept>
#include <string>

namespace loadbench::sampler {

std::optional<MachineCpuTicks> parse_machine_cpu_line(std::string_view text) {
    if (text.substr(0, 4) != "cpu ") return std::nullopt;
    std::string_view rest = text.substr(4);
    rest = rest.substr(0, rest.find('\n'));
    MachineCpuTicks ticks;
    std::uint64_t* const fields[] = {&ticks.user,   &ticks.nice, &ticks.system,  &ticks.idle,
                                     &ticks.iowait, &ticks.irq,  &ticks.softirq, &ticks.steal};
    int parsed = 0;
    for (auto* field : fields) {
        while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
        if (rest.empty()) break;  // old kernels have fewer columns; the rest stay 0
        const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), *field);
        if (ec != std::errc()) return std::nullopt;
        rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
        ++parsed;
    }
    if (parsed < 4) return std::nullopt;
    return ticks;
}

std::optional<double> parse_loadavg_1m(std::string_view text) {
    const std::size_t space = text.find(' ');
    if (space == std::string_view::npos || space == 0 || space > 32) return std::nullopt;
    // from_chars for double needs GCC 11+; strtod on a NUL-terminated copy is portable.
    char number[33];
    std::memcpy(number, text.data(), space);
    number[space] = '\0';
    char* end = nullptr;
    const double value = std::strtod(number, &end);
    if (end != number + space) return std::nullopt;
    return value;
}

std::optional<int> parse_loadavg_last_pid(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    const std::size_t space = text.rfind(' ');
    if (space == std::string_view::npos) return std::nullopt;
    int pid = 0;
    const auto [end, ec] = std::from_chars(text.data() + space + 1, text.data() + text.size(), pid);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return pid;
}

MachineReader::MachineReader()
    : stat_(open_read_only(AT_FDCWD, "/proc/stat")), loadavg_(open_read_only(AT_FDCWD, "/proc/loadavg")) {
    if (!stat_.is_open() || !loadavg_.is_open())
        throw std::runtime_error(std::string("cannot open /proc/stat or /proc/loadavg: ") + std::strerror(errno));
}

MachineCounters MachineReader::read(std::vector<char>& buffer) const {
    MachineCounters counters;
    const ReadResult stat = read_whole(stat_, buffer);
    const auto cpu = stat.ok ? parse_machine_cpu_line(stat.text) : std::nullopt;
    if (!cpu) throw std::runtime_error("cannot read the cpu line of /proc/stat");
    counters.cpu = *cpu;
    const ReadResult loadavg = read_whole(loadavg_, buffer);
    if (loadavg.ok) {
        counters.loadavg_1m = parse_loadavg_1m(loadavg.text).value_or(0.0);
        counters.last_pid = parse_loadavg_last_pid(loadavg.text).value_or(0);
    }
    return counters;
}

}  // namespace loadbench::sampler
