#include "core/sampler/proc_status.hpp"

#include <charconv>

namespace loadbench::sampler {
namespace {

// "Key:\t  12345 kB" -> 12345 (the unit, when present, is always kB).
template <typename Integer>
bool value_after_key(std::string_view line, std::string_view key, Integer& value) {
    if (line.size() <= key.size() || line.substr(0, key.size()) != key) return false;
    std::string_view rest = line.substr(key.size());
    std::size_t start = 0;
    while (start < rest.size() && (rest[start] == ' ' || rest[start] == '\t')) ++start;
    const auto [end, ec] = std::from_chars(rest.data() + start, rest.data() + rest.size(), value);
    (void)end;
    return ec == std::errc();
}

}  // namespace

ProcStatus parse_proc_status(std::string_view text) {
    ProcStatus status;
    while (!text.empty()) {
        const std::size_t newline = text.find('\n');
        const std::string_view line = text.substr(0, newline);
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
        switch (line.empty() ? '\0' : line[0]) {
            case 'T':
                value_after_key(line, "Tgid:", status.tgid);
                break;
            case 'V':
                if (value_after_key(line, "VmRSS:", status.vm_rss_kib)) status.has_memory = true;
                value_after_key(line, "VmHWM:", status.vm_hwm_kib);
                break;
            case 'v':
                if (value_after_key(line, "voluntary_ctxt_switches:", status.voluntary_ctxt_switches))
                    status.has_ctxt_switches = true;
                break;
            case 'n':
                value_after_key(line, "nonvoluntary_ctxt_switches:", status.nonvoluntary_ctxt_switches);
                break;
            default:
                break;
        }
    }
    return status;
}

}  // namespace loadbench::sampler
