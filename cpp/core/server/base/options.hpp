#pragma once
// The reference server's options, declared once.
//
// Each line of LOADBENCH_SERVER_OPTIONS is one option: its flag, the keyword Python knows it by
// (ServerProcess, the in-process Server, `loadbench serve`), the ServerConfig field it sets, how
// its value is read (kind), the range an integer must lie in, the metavar and the help. From the
// list come the binary's parser and its usage (options.cpp), the in-process Server's keyword
// arguments (register_server.cpp) and, through _core.server_options(), `loadbench serve`'s
// flags and ServerProcess's argv - so a flag, its range and its message are written once.
//
// Kinds:
//   text     any string                  path     a non-empty string
//   integer  an integer in [min, max]    accept   reuseport | shared
//   on       a switch that sets the field true; off: one that sets it false (--no-http): the
//            keyword is the field's own sense (http=False is --no-http)
// The default is the field's initializer in ServerConfig (config.hpp).
#include "core/server/base/config.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loadbench::server {

// X(flag, "keyword", field, kind, min, max, metavar, help)
// clang-format off
#define LOADBENCH_SERVER_OPTIONS(X)                                                                                  \
    X("--host", "host", host, text, 0, 0, "ADDR", "address to bind")                                                  \
    X("--port", "port", http_port, integer, 0, 65535, "N", "HTTP port, 0 = a free port")                              \
    X("--unix", "unix", unix_path, path, 0, 0, "PATH",                                                                \
      "plain HTTP (and h2c) on this unix socket instead of --port; a stale socket file there is replaced, and "     \
      "removed again at a clean stop")                                                                              \
    X("--no-http", "http", serve_http, off, 0, 0, "", "no plain HTTP listener (needs --tls)")                         \
    X("--tls", "tls", serve_https, on, 0, 0, "",                                                                      \
      "also serve HTTPS (self-signed EC P-256 cert, CN=localhost, unless --cert/--key)")                            \
    X("--tls-port", "tls_port", https_port, integer, 0, 65535, "N", "HTTPS port, 0 = a free port")                    \
    X("--cert", "cert", cert_file, path, 0, 0, "FILE", "PEM certificate chain for HTTPS (with --key)")                \
    X("--key", "key", key_file, path, 0, 0, "FILE", "PEM private key for HTTPS (with --cert)")                        \
    X("--no-tls-resumption", "tls_resumption", tls_resumption, off, 0, 0, "",                                         \
      "no session cache and no session tickets: every handshake is a full one (HTTP/3's QUIC session tickets "      \
      "included)")                                                                                                  \
    X("--workers", "workers", workers, integer, 1, 1024, "N", "worker threads, each with its own event loop")         \
    X("--max-body", "max_body", max_body_bytes, integer, 0, std::uint64_t{1} << 40, "BYTES",                          \
      "larger request bodies get 413")                                                                              \
    X("--header-timeout-ms", "header_timeout_ms", header_timeout_ms, integer, 1, 86'400'000, "MS",                    \
      "a request header must arrive within this time")                                                              \
    X("--idle-timeout-ms", "idle_timeout_ms", idle_timeout_ms, integer, 1, 86'400'000, "MS",                          \
      "idle keep-alive connections are closed after this")                                                          \
    X("--accept", "accept", accept, accept, 0, 0, "reuseport|shared",                                                 \
      "SO_REUSEPORT listener per worker, or one shared listener")                                                   \
    X("--no-h2", "h2", h2, off, 0, 0, "", "HTTP/1.1 only (no h2c, ALPN offers only http/1.1)")                        \
    X("--h2-max-streams", "h2_max_streams", h2_max_streams, integer, 1, 1'000'000, "N",                               \
      "HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; more are refused")                                                   \
    X("--h2-max-requests", "h2_max_requests", h2_max_requests, integer, 0, std::uint64_t{1} << 40, "N",               \
      "HTTP/2: GOAWAY after N streams on a connection, 0 = never")                                                  \
    X("--h3", "h3", h3, on, 0, 0, "",                                                                                 \
      "also serve HTTP/3 (QUIC, ALPN h3) over UDP on the TLS port's number, with the same certificate; TCP "       \
      "responses then carry Alt-Svc: h3=\":PORT\". Its limits: --h2-max-streams concurrent streams, "               \
      "--idle-timeout-ms, --max-body. Needs --tls and a build with ngtcp2 + nghttp3")                               \
    X("--h3-0rtt", "h3_0rtt", h3_early_data, on, 0, 0, "",                                                            \
      "HTTP/3: accept 0-RTT early data on resumed connections (each ClientHello's once: GnuTLS anti-replay, 10 s " \
      "window; a replay gets a full 1-RTT handshake). Early data is replayable: the routes answer it as any "      \
      "request. Needs --h3")
// clang-format on

enum class OptionKind { text, path, integer, accept, on, off };

std::string_view to_string(OptionKind kind);

struct ServerOption {
    std::string_view flag;
    std::string_view keyword;
    OptionKind kind;
    std::uint64_t min;
    std::uint64_t max;
    std::string_view metavar;
    std::string_view help;
    // Sets the option in `config` from its text ("" for a switch); throws ConfigError naming the
    // flag when the text is not a value of its kind.
    void (*set)(ServerConfig& config, std::string_view text);
    // Its value in `config`, as its flag would be given ("true"/"false" for a switch).
    std::string (*get)(const ServerConfig& config);

    bool is_switch() const { return kind == OptionKind::on || kind == OptionKind::off; }
};

// Every option, in the order of LOADBENCH_SERVER_OPTIONS.
const std::vector<ServerOption>& server_options();
// The option with this flag or keyword; nullptr when there is none.
const ServerOption* find_option(std::string_view flag_or_keyword);

// The native binary's flags (see loadbench-server --help). `help_requested` is set for -h.
struct ParsedArgs {
    ServerConfig config;
    bool help_requested = false;
};
ParsedArgs parse_server_args(const std::vector<std::string>& args);
std::string server_usage();

}  // namespace loadbench::server
