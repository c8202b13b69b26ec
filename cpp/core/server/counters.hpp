#pragma once
// What a server has done: connections and requests per route.
//
// Each worker owns one WorkerCounters and is its only writer, so the request path never
// touches another thread's cache line; readers (Python, the exit line) sum a snapshot.
#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace loadbench::server {

// The outcome a request is counted under (one per response sent).
enum class RequestKind : std::uint8_t {
    plaintext,
    json,
    echo,
    delay,
    not_found,
    method_not_allowed,
    bad_request,       // 400 (malformed request, invalid /delay parameter)
    header_too_large,  // 431
    body_too_large,    // 413
    not_implemented,   // 501 (a transfer coding other than chunked)
    count_
};
inline constexpr std::size_t request_kind_count = static_cast<std::size_t>(RequestKind::count_);

// Stable names used in the JSON exit line and the Python counters dict.
std::string_view to_string(RequestKind kind);

// What HTTP/2 did, beside the per-route counts (which cover both protocols).
struct Http2Counts {
    std::uint64_t connections = 0;      // connections that spoke h2 (h2c or ALPN h2)
    std::uint64_t streams = 0;          // request streams accepted
    std::uint64_t requests = 0;         // responses sent over h2
    std::uint64_t streams_refused = 0;  // RST_STREAM REFUSED_STREAM sent (over the stream limit)
    std::uint64_t goaways = 0;          // GOAWAY frames sent (shutdown, --h2-max-requests, errors)
};

// What HTTP/3 did (QUIC connections on the UDP port; their responses count per route too).
struct Http3Counts {
    std::uint64_t connections = 0;  // QUIC connections begun (a client Initial accepted)
    std::uint64_t handshakes = 0;   // of those, the ones whose TLS handshake completed
    std::uint64_t resumed = 0;      // of those, resumed with a session ticket
    std::uint64_t zero_rtt = 0;     // of those, whose 0-RTT early data was accepted (--h3-0rtt)
    std::uint64_t requests = 0;     // responses sent over h3
    std::uint64_t goaways = 0;      // final GOAWAY frames sent (graceful stop)
};

struct CountersSnapshot {
    std::uint64_t connections_accepted = 0;
    std::uint64_t connections_open = 0;
    std::array<std::uint64_t, request_kind_count> requests{};
    Http2Counts h2;
    Http3Counts h3;
    std::uint64_t requests_total() const;
    // HTTP/1.x is everything that is neither HTTP/2 nor HTTP/3.
    std::uint64_t h1_requests() const { return requests_total() - h2.requests - h3.requests; }
    std::uint64_t h1_connections() const { return connections_accepted - h2.connections - h3.connections; }
    CountersSnapshot& operator+=(const CountersSnapshot& other);
};

class alignas(64) WorkerCounters {
public:
    // Single writer: a relaxed load + store is a plain increment, no locked instruction.
    void connection_opened() { bump(accepted_); }
    void connection_closed() { bump(closed_); }
    void request(RequestKind kind) { bump(requests_[static_cast<std::size_t>(kind)]); }
    void h2_connection() { bump(h2_connections_); }
    void h2_stream() { bump(h2_streams_); }
    void h2_request() { bump(h2_requests_); }
    void h2_stream_refused() { bump(h2_refused_); }
    void h2_goaway() { bump(h2_goaways_); }
    void h3_connection() { bump(h3_connections_); }
    void h3_handshake() { bump(h3_handshakes_); }
    void h3_resumed() { bump(h3_resumed_); }
    void h3_zero_rtt() { bump(h3_zero_rtt_); }
    void h3_request() { bump(h3_requests_); }
    void h3_goaway() { bump(h3_goaways_); }
    CountersSnapshot snapshot() const;

private:
    static void bump(std::atomic<std::uint64_t>& c) {
        c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    std::atomic<std::uint64_t> accepted_{0};
    std::atomic<std::uint64_t> closed_{0};
    std::array<std::atomic<std::uint64_t>, request_kind_count> requests_{};
    std::atomic<std::uint64_t> h2_connections_{0};
    std::atomic<std::uint64_t> h2_streams_{0};
    std::atomic<std::uint64_t> h2_requests_{0};
    std::atomic<std::uint64_t> h2_refused_{0};
    std::atomic<std::uint64_t> h2_goaways_{0};
    std::atomic<std::uint64_t> h3_connections_{0};
    std::atomic<std::uint64_t> h3_handshakes_{0};
    std::atomic<std::uint64_t> h3_resumed_{0};
    std::atomic<std::uint64_t> h3_zero_rtt_{0};
    std::atomic<std::uint64_t> h3_requests_{0};
    std::atomic<std::uint64_t> h3_goaways_{0};
};

}  // namespace loadbench::server
