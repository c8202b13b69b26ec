#include "core/server/config.hpp"

#include "core/server/options.hpp"

#include "core/server/h3/h3_session.hpp"

#include <algorithm>

#include <sys/un.h>

namespace loadbench::server {

std::string_view to_string(AcceptStrategy strategy) {
    return strategy == AcceptStrategy::reuseport ? "reuseport" : "shared";
}

void validate(const ServerConfig& config) {
    if (!config.serve_http && !config.serve_https) {
        throw ConfigError("nothing to serve: --no-http needs --tls");
    }
    if (config.workers == 0) throw ConfigError("--workers must be at least 1");
    if (config.cert_file.empty() != config.key_file.empty()) {
        throw ConfigError("--cert and --key go together: give both or neither");
    }
    if (!config.cert_file.empty() && !config.serve_https) {
        throw ConfigError("--cert/--key need --tls");
    }
    if (config.host.empty()) throw ConfigError("--host must not be empty");
    if (config.h3) {
        if (!http3_available()) throw ConfigError("--h3: " + std::string(http3_missing_reason()));
        if (!config.serve_https)
            throw ConfigError("--h3 serves HTTP/3 on the TLS port's number over UDP: it needs --tls");
    }
    if (config.h3_early_data) {
        if (!config.h3) throw ConfigError("--h3-0rtt accepts HTTP/3 early data: it needs --h3");
        if (!config.tls_resumption)
            throw ConfigError("--h3-0rtt rides on resumed sessions: it cannot go with --no-tls-resumption");
    }
    if (!config.unix_path.empty()) {
        if (!config.serve_http) throw ConfigError("--unix serves plain HTTP: it cannot go with --no-http");
        if (config.unix_path.size() >= sizeof(sockaddr_un::sun_path))
            throw ConfigError("--unix: the path is longer than the " +
                              std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes an AF_UNIX address holds");
    }
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
