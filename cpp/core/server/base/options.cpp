#include "core/server/base/options.hpp"

#include <algorithm>
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

ParsedArgs parse_server_args(const std::vector<std::string>& args) {
    ParsedArgs parsed;
    ServerConfig& c = parsed.config;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string flag = args[i];
        std::string inline_value;
        bool has_inline = false;
        if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
            inline_value = flag.substr(eq + 1);
            flag.resize(eq);
            has_inline = true;
        }
        auto value = [&]() -> std::string {
            if (has_inline) return inline_value;
            if (i + 1 >= args.size()) throw ConfigError(flag + " needs a value");
            return args[++i];
        };
        auto no_value = [&] {
            if (has_inline) throw ConfigError(flag + " takes no value");
        };
        if (flag == "-h" || flag == "--help") {
            parsed.help_requested = true;
            continue;
        }
        const ServerOption* option = flag.rfind("--", 0) == 0 ? find_option(flag) : nullptr;
        if (option == nullptr) throw ConfigError("unknown flag '" + args[i] + "' (see --help)");
        if (option->is_switch()) {
            no_value();
            option->set(c, "");
        } else {
            option->set(c, value());
        }
    }
    if (!parsed.help_requested) validate(c);
    return parsed;
}

std::string server_usage() {
    // Each option's line from its declaration (options.hpp): flag and metavar in a column of
    // 26, the help wrapped at 100 characters, the default from ServerConfig's initializers.
    constexpr std::size_t column = 26, width = 100;
    std::string text = R"(usage: loadbench-server [flags]
Boost.Beast HTTP/1.1 + nghttp2 HTTP/2 reference server. Prints one JSON line when listening
and one at exit. HTTP/2: h2c with prior knowledge on the HTTP port, ALPN h2 on the TLS port.
)";
    const ServerConfig defaults;
    for (const auto& option : server_options()) {
        std::string left = "  " + std::string(option.flag);
        if (!option.metavar.empty()) left += " " + std::string(option.metavar);
        left += left.size() + 1 < column ? std::string(column - left.size(), ' ') : "  ";
        std::string help(option.help);
        const std::string value = option.get(defaults);
        if (!option.is_switch() && !value.empty()) help += " (default " + value + ")";
        std::string line = left;
        std::size_t start = 0;
        while (start < help.size()) {
            std::size_t room = width > line.size() ? width - line.size() : 20;
            std::size_t end = help.size() - start <= room ? help.size() : help.rfind(' ', start + room);
            if (end == std::string::npos || end <= start) end = std::min(help.size(), start + room);
            line += help.substr(start, end - start);
            text += line + "\n";
            start = end < help.size() && help[end] == ' ' ? end + 1 : end;
            line = std::string(column, ' ');
        }
    }
    text += "Routes: GET / and /plaintext, GET /json, POST /echo, GET /delay?ms=N. SIGINT/SIGTERM stop gracefully.\n";
    return text;
}

}  // namespace loadbench::server
