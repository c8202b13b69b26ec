#include "core/server/config.hpp"

#include "core/server/h3_session.hpp"

#include <charconv>
#include <limits>

#include <sys/un.h>

namespace loadbench::server {

std::string_view to_string(AcceptStrategy strategy) {
    return strategy == AcceptStrategy::reuseport ? "reuseport" : "shared";
}

namespace {

template <class Integer>
Integer parse_integer(std::string_view flag, std::string_view text, Integer min, Integer max) {
    unsigned long long value = 0;
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc{} || ptr != end || value < static_cast<unsigned long long>(min) ||
        value > static_cast<unsigned long long>(max)) {
        throw ConfigError(std::string(flag) + " expects an integer from " + std::to_string(min) + " to " +
                          std::to_string(max) + ", got '" + std::string(text) + "'");
    }
    return static_cast<Integer>(value);
}

}  // namespace

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
        } else if (flag == "--host") {
            c.host = value();
        } else if (flag == "--port") {
            c.http_port = parse_integer<std::uint16_t>(flag, value(), 0, 65535);
        } else if (flag == "--unix") {
            c.unix_path = value();
            if (c.unix_path.empty()) throw ConfigError("--unix needs a socket path");
        } else if (flag == "--no-http") {
            no_value();
            c.serve_http = false;
        } else if (flag == "--tls") {
            no_value();
            c.serve_https = true;
        } else if (flag == "--tls-port") {
            c.https_port = parse_integer<std::uint16_t>(flag, value(), 0, 65535);
        } else if (flag == "--no-tls-resumption") {
            no_value();
            c.tls_resumption = false;
        } else if (flag == "--cert") {
            c.cert_file = value();
        } else if (flag == "--key") {
            c.key_file = value();
        } else if (flag == "--workers") {
            c.workers = parse_integer<unsigned>(flag, value(), 1, 1024);
        } else if (flag == "--max-body") {
            c.max_body_bytes = parse_integer<std::size_t>(flag, value(), 0, std::size_t{1} << 40);
        } else if (flag == "--header-timeout-ms") {
            c.header_timeout_ms = parse_integer<unsigned>(flag, value(), 1, 86'400'000);
        } else if (flag == "--idle-timeout-ms") {
            c.idle_timeout_ms = parse_integer<unsigned>(flag, value(), 1, 86'400'000);
        } else if (flag == "--no-h2") {
            no_value();
            c.h2 = false;
        } else if (flag == "--h2-max-streams") {
            c.h2_max_streams = parse_integer<std::uint32_t>(flag, value(), 1, 1'000'000);
        } else if (flag == "--h2-max-requests") {
            c.h2_max_requests = parse_integer<std::uint64_t>(flag, value(), 0, std::uint64_t{1} << 40);
        } else if (flag == "--h3") {
            no_value();
            c.h3 = true;
        } else if (flag == "--h3-0rtt") {
            no_value();
            c.h3_early_data = true;
        } else if (flag == "--accept") {
            const std::string v = value();
            if (v == "reuseport") {
                c.accept = AcceptStrategy::reuseport;
            } else if (v == "shared") {
                c.accept = AcceptStrategy::shared;
            } else {
                throw ConfigError("--accept expects 'reuseport' or 'shared', got '" + v + "'");
            }
        } else {
            throw ConfigError("unknown flag '" + args[i] + "' (see --help)");
        }
    }
    if (!parsed.help_requested) validate(c);
    return parsed;
}

std::string server_usage() {
    return R"(usage: loadbench-server [flags]
Boost.Beast HTTP/1.1 + nghttp2 HTTP/2 reference server. Prints one JSON line when listening
and one at exit. HTTP/2: h2c with prior knowledge on the HTTP port, ALPN h2 on the TLS port.
  --host ADDR             address to bind (default 127.0.0.1)
  --port N                HTTP port, 0 = a free port (default 0)
  --unix PATH             plain HTTP (and h2c) on this unix socket instead of --port; a stale
                          socket file there is replaced, and removed again at a clean stop
  --no-http               no plain HTTP listener (needs --tls)
  --tls                   also serve HTTPS (self-signed EC P-256 cert, CN=localhost, unless --cert/--key)
  --tls-port N            HTTPS port, 0 = a free port (default 0)
  --cert FILE --key FILE  PEM certificate chain and private key for HTTPS
  --no-tls-resumption     no session cache and no session tickets: every handshake is a full one
                          (HTTP/3's QUIC session tickets included)
  --workers N             worker threads, each with its own event loop (default 1)
  --max-body BYTES        larger request bodies get 413 (default 1048576)
  --header-timeout-ms MS  a request header must arrive within this time (default 10000)
  --idle-timeout-ms MS    idle keep-alive connections are closed after this (default 60000)
  --accept reuseport|shared  SO_REUSEPORT listener per worker, or one shared listener (default reuseport)
  --no-h2                 HTTP/1.1 only (no h2c, ALPN offers only http/1.1)
  --h2-max-streams N      HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; more are refused (default 100)
  --h2-max-requests N     HTTP/2: GOAWAY after N streams on a connection, 0 = never (default 0)
  --h3                    also serve HTTP/3 (QUIC, ALPN h3) over UDP on the TLS port's number, with the
                          same certificate; TCP responses then carry Alt-Svc: h3=":PORT". Its limits:
                          --h2-max-streams concurrent streams, --idle-timeout-ms, --max-body. Needs --tls
                          and a build with ngtcp2 + nghttp3
  --h3-0rtt               HTTP/3: accept 0-RTT early data on resumed connections (each ClientHello's
                          once: GnuTLS anti-replay, 10 s window; a replay gets a full 1-RTT handshake).
                          Early data is replayable: the routes answer it as any request. Needs --h3
Routes: GET / and /plaintext, GET /json, POST /echo, GET /delay?ms=N. SIGINT/SIGTERM stop gracefully.
)";
}

}  // namespace loadbench::server
