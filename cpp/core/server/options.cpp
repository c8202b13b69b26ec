#include "core/server/options.hpp"

#include <charconv>
#include <type_traits>

namespace loadbench::server {

std::string_view to_string(OptionKind kind) {
    switch (kind) {
        case OptionKind::text:
            return "text";
        case OptionKind::path:
            return "path";
        case OptionKind::integer:
            return "integer";
        case OptionKind::accept:
            return "accept";
        case OptionKind::on:
            return "on";
        case OptionKind::off:
            return "off";
    }
    return "?";
}

namespace {

// How each kind reads its text into its field; the flag names it in every message.
void read_text(std::string& field, std::string_view, std::string_view text, std::uint64_t, std::uint64_t) {
    field = std::string(text);
}

void read_path(std::string& field, std::string_view flag, std::string_view text, std::uint64_t, std::uint64_t) {
    if (text.empty()) {
        const bool socket = flag == "--unix";
        throw ConfigError(std::string(flag) + " needs a " + (socket ? "socket path" : "file path"));
    }
    field = std::string(text);
}

template <class Integer>
void read_integer(Integer& field, std::string_view flag, std::string_view text, std::uint64_t min, std::uint64_t max) {
    static_assert(std::is_unsigned_v<Integer>);
    unsigned long long value = 0;
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc{} || ptr != end || value < min || value > max) {
        throw ConfigError(std::string(flag) + " expects an integer from " + std::to_string(min) + " to " +
                          std::to_string(max) + ", got '" + std::string(text) + "'");
    }
    field = static_cast<Integer>(value);
}

void read_accept(AcceptStrategy& field, std::string_view flag, std::string_view text, std::uint64_t, std::uint64_t) {
    if (text == "reuseport") {
        field = AcceptStrategy::reuseport;
    } else if (text == "shared") {
        field = AcceptStrategy::shared;
    } else {
        throw ConfigError(std::string(flag) + " expects 'reuseport' or 'shared', got '" + std::string(text) + "'");
    }
}

void read_on(bool& field, std::string_view, std::string_view, std::uint64_t, std::uint64_t) { field = true; }
void read_off(bool& field, std::string_view, std::string_view, std::uint64_t, std::uint64_t) { field = false; }

std::string show(const std::string& value) { return value; }
std::string show(bool value) { return value ? "true" : "false"; }
std::string show(AcceptStrategy value) { return std::string(to_string(value)); }
template <class Integer, class = std::enable_if_t<std::is_integral_v<Integer>>>
std::string show(Integer value) {
    return std::to_string(value);
}

std::vector<ServerOption> declared() {
    std::vector<ServerOption> options;
#define LOADBENCH_SERVER_OPTION(flag, keyword, field, kind, min, max, metavar, help)                             \
    options.push_back(                                                                                           \
        ServerOption{flag, keyword, OptionKind::kind, min, max, metavar, help,                                   \
                     [](ServerConfig& c, std::string_view text) { read_##kind(c.field, flag, text, min, max); }, \
                     [](const ServerConfig& c) { return show(c.field); }});
    LOADBENCH_SERVER_OPTIONS(LOADBENCH_SERVER_OPTION)
#undef LOADBENCH_SERVER_OPTION
    return options;
}

}  // namespace

const std::vector<ServerOption>& server_options() {
    static const std::vector<ServerOption> options = declared();
    return options;
}

const ServerOption* find_option(std::string_view flag_or_keyword) {
    for (const auto& option : server_options()) {
        if (option.flag == flag_or_keyword || option.keyword == flag_or_keyword) return &option;
    }
    return nullptr;
}

}  // namespace loadbench::server
