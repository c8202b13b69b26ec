#include "core/sampler/proc_stat.hpp"

#include <charconv>

namespace loadbench::sampler {
namespace {

// Reads the next space-separated field; false when the text ends.
bool next_field(std::string_view& rest, std::string_view& field) {
    std::size_t start = 0;
    while (start < rest.size() && (rest[start] == ' ' || rest[start] == '\n')) ++start;
    if (start == rest.size()) return false;
    std::size_t end = start;
    while (end < rest.size() && rest[end] != ' ' && rest[end] != '\n') ++end;
    field = rest.substr(start, end - start);
    rest.remove_prefix(end);
    return true;
}

template <typename Integer>
bool to_integer(std::string_view field, Integer& value) {
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    return ec == std::errc() && end == field.data() + field.size();
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
    ProcStat stat;
    const std::size_t open = text.find('(');
    const std::size_t close = text.rfind(')');  // the LAST ')': names may contain ')'
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
    std::string_view pid_text = text.substr(0, open);
    while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
    if (!to_integer(pid_text, stat.pid)) return std::nullopt;
    stat.comm = text.substr(open + 1, close - open - 1);

    // Fields after the name, numbered as in proc(5): 3 = state, 4 = ppid, ...
    std::string_view rest = text.substr(close + 1);
    std::string_view field;
    for (int number = 3; number <= 24; ++number) {
        if (!next_field(rest, field)) return std::nullopt;
        bool ok = true;
        switch (number) {
            case 3:
                ok = field.size() == 1;
                stat.state = field.empty() ? '?' : field[0];
                break;
            case 4:
                ok = to_integer(field, stat.ppid);
                break;
            case 9:
                ok = to_integer(field, stat.flags);
                break;
            case 14:
                ok = to_integer(field, stat.utime_ticks);
                break;
            case 15:
                ok = to_integer(field, stat.stime_ticks);
                break;
            case 16:
                ok = to_integer(field, stat.cutime_ticks);
                break;
            case 17:
                ok = to_integer(field, stat.cstime_ticks);
                break;
            case 20:
                ok = to_integer(field, stat.num_threads);
                break;
            case 22:
                ok = to_integer(field, stat.starttime_ticks);
                break;
            case 24:
                ok = to_integer(field, stat.rss_pages);
                break;
            default:
                break;
        }
        if (!ok) return std::nullopt;
    }
    return stat;
}

}  // namespace loadbench::sampler
