#pragma once
// What a Beast reference server is told to do: addresses, TLS material, workers, limits.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loadbench::server {

// How accepted connections reach the workers.
//  reuseport: every worker owns a listening socket on the same port (SO_REUSEPORT) and the
//             kernel spreads new connections; nothing is shared between workers.
//  shared:    worker 0 owns the only listening socket and hands connections round-robin.
enum class AcceptStrategy { reuseport, shared };

std::string_view to_string(AcceptStrategy strategy);

struct ServerConfig {
    std::string host = "127.0.0.1";
    bool serve_http = true;
    std::uint16_t http_port = 0;  // 0 = the kernel picks a free port
    // Non-empty: the plain listener (HTTP/1.1 and h2c) is this AF_UNIX socket instead of
    // host:http_port; HTTPS, if asked for, stays on TCP. One listener that every worker is
    // handed connections from (SO_REUSEPORT groups are for ports), whatever `accept` says.
    std::string unix_path;
    bool serve_https = false;
    std::uint16_t https_port = 0;
    std::string cert_file;  // both empty = generate a self-signed EC P-256 cert in memory
    std::string key_file;
    // Session cache and tickets (resumption). Off: every handshake is a full one and the
    // server does no per-handshake cache insert or ticket encryption (nginx's
    // 'ssl_session_cache off; ssl_session_tickets off', the setting it is compared with).
    bool tls_resumption = true;
    unsigned workers = 1;
    std::size_t max_body_bytes = 1024 * 1024;
    std::size_t max_header_bytes = 8 * 1024;
    unsigned header_timeout_ms = 10'000;  // whole request header must arrive in this time
    unsigned idle_timeout_ms = 60'000;    // keep-alive connection with no request in flight
    AcceptStrategy accept = AcceptStrategy::reuseport;
    bool h2 = true;                      // h2c (prior knowledge) on the plain port, ALPN h2 on TLS
    std::uint32_t h2_max_streams = 100;  // SETTINGS_MAX_CONCURRENT_STREAMS; more are refused
    std::uint64_t h2_max_requests = 0;   // GOAWAY after this many streams per connection (0 = no limit)
    // HTTP/3 over QUIC on UDP, on the TLS port's number (needs serve_https and a build with
    // ngtcp2 + nghttp3); the TCP responses then carry Alt-Svc: h3=":PORT". Its stream limit
    // is h2_max_streams, its idle timeout idle_timeout_ms.
    bool h3 = false;
    // HTTP/3: accept 0-RTT early data on resumed connections (--h3-0rtt), each ClientHello's
    // once (GnuTLS anti-replay). Tickets are issued whenever tls_resumption is on.
    bool h3_early_data = false;
};

// A flag the user got wrong; the message names the flag and what was expected.
class ConfigError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// Throws ConfigError when the configuration cannot work (no listener, 0 workers, ...).
void validate(const ServerConfig& config);

}  // namespace loadbench::server
