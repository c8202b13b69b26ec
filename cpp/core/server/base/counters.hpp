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

// Each protocol's counters, declared once: X(protocol, name, one, meaning). Each line becomes a
// field of the protocol's block in CountersSnapshot, WorkerCounters' atomic and its
// `<protocol>_<one>()` bump, the sum over workers, and - in declaration order - the key of the
// exit line's JSON (status_lines.cpp) and of the Python counters dict (register_server.cpp).
// A new counter is its line here and its bump where it happens.
//
// HTTP/2, beside the per-route counts (which cover every protocol).
#define LOADBENCH_SERVER_H2_COUNTERS(X)                                                              \
    X(h2, connections, connection, "connections that spoke h2 (h2c or ALPN h2)")                     \
    X(h2, streams, stream, "request streams accepted")                                               \
    X(h2, requests, request, "responses sent over h2")                                               \
    X(h2, streams_refused, stream_refused, "RST_STREAM REFUSED_STREAM sent (over the stream limit)") \
    X(h2, goaways, goaway, "GOAWAY frames sent (shutdown, --h2-max-requests, errors)")               \
    X(h2, resets_received, reset_received, "RST_STREAM frames received (clients cancelling; rapid reset)")

// HTTP/3: QUIC connections on the UDP port (their responses count per route too).
#define LOADBENCH_SERVER_H3_COUNTERS(X)                                                    \
    X(h3, connections, connection, "QUIC connections begun (a client Initial accepted)")   \
    X(h3, handshakes, handshake, "of those, the ones whose TLS handshake completed")       \
    X(h3, resumed, resumed, "of those, resumed with a session ticket")                     \
    X(h3, zero_rtt, zero_rtt, "of those, whose 0-RTT early data was accepted (--h3-0rtt)") \
    X(h3, requests, request, "responses sent over h3")                                     \
    X(h3, goaways, goaway, "final GOAWAY frames sent (graceful stop)")

#define LOADBENCH_SERVER_PROTOCOL_COUNTERS(X) LOADBENCH_SERVER_H2_COUNTERS(X) LOADBENCH_SERVER_H3_COUNTERS(X)

#define LOADBENCH_COUNTER_FIELD(protocol, name, one, meaning) std::uint64_t name = 0;
struct Http2Counts {
    LOADBENCH_SERVER_H2_COUNTERS(LOADBENCH_COUNTER_FIELD)
};
struct Http3Counts {
    LOADBENCH_SERVER_H3_COUNTERS(LOADBENCH_COUNTER_FIELD)
};
#undef LOADBENCH_COUNTER_FIELD

// Calls f(name, value) for each counter of one protocol's block, in declaration order.
#define LOADBENCH_COUNTER_VISIT(protocol, name, one, meaning) f(#name, c.name);
template <class F>
void each_counter(const Http2Counts& c, F&& f) {
    LOADBENCH_SERVER_H2_COUNTERS(LOADBENCH_COUNTER_VISIT)
}
template <class F>
void each_counter(const Http3Counts& c, F&& f) {
    LOADBENCH_SERVER_H3_COUNTERS(LOADBENCH_COUNTER_VISIT)
}
#undef LOADBENCH_COUNTER_VISIT

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
#define LOADBENCH_COUNTER_BUMP(protocol, name, one, meaning) \
    void protocol##_##one() { bump(protocol##_##name##_); }
    LOADBENCH_SERVER_PROTOCOL_COUNTERS(LOADBENCH_COUNTER_BUMP)
#undef LOADBENCH_COUNTER_BUMP
    CountersSnapshot snapshot() const;

private:
    static void bump(std::atomic<std::uint64_t>& c) {
        c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    std::atomic<std::uint64_t> accepted_{0};
    std::atomic<std::uint64_t> closed_{0};
    std::array<std::atomic<std::uint64_t>, request_kind_count> requests_{};
#define LOADBENCH_COUNTER_ATOMIC(protocol, name, one, meaning) std::atomic<std::uint64_t> protocol##_##name##_{0};
    LOADBENCH_SERVER_PROTOCOL_COUNTERS(LOADBENCH_COUNTER_ATOMIC)
#undef LOADBENCH_COUNTER_ATOMIC
};

}  // namespace loadbench::server
