#include "core/server/counters.hpp"

namespace loadbench::server {

std::string_view to_string(RequestKind kind) {
    switch (kind) {
        case RequestKind::plaintext:
            return "plaintext";
        case RequestKind::json:
            return "json";
        case RequestKind::echo:
            return "echo";
        case RequestKind::delay:
            return "delay";
        case RequestKind::not_found:
            return "not_found";
        case RequestKind::method_not_allowed:
            return "method_not_allowed";
        case RequestKind::bad_request:
            return "bad_request";
        case RequestKind::header_too_large:
            return "header_too_large";
        case RequestKind::not_implemented:
            return "not_implemented";
        case RequestKind::body_too_large:
            return "body_too_large";
        case RequestKind::count_:
            break;
    }
    return "unknown";
}

std::uint64_t CountersSnapshot::requests_total() const {
    std::uint64_t total = 0;
    for (auto n : requests) total += n;
    return total;
}

CountersSnapshot& CountersSnapshot::operator+=(const CountersSnapshot& other) {
    connections_accepted += other.connections_accepted;
    connections_open += other.connections_open;
    for (std::size_t i = 0; i < requests.size(); ++i) requests[i] += other.requests[i];
    h2.connections += other.h2.connections;
    h2.streams += other.h2.streams;
    h2.requests += other.h2.requests;
    h2.streams_refused += other.h2.streams_refused;
    h2.goaways += other.h2.goaways;
    h3.connections += other.h3.connections;
    h3.handshakes += other.h3.handshakes;
    h3.resumed += other.h3.resumed;
    h3.zero_rtt += other.h3.zero_rtt;
    h3.requests += other.h3.requests;
    h3.goaways += other.h3.goaways;
    return *this;
}

CountersSnapshot WorkerCounters::snapshot() const {
    CountersSnapshot s;
    // Read closed first: a connection accepted in between can only make `open` larger,
    // never wrap it below zero.
    const auto closed = closed_.load(std::memory_order_relaxed);
    s.connections_accepted = accepted_.load(std::memory_order_relaxed);
    s.connections_open = s.connections_accepted >= closed ? s.connections_accepted - closed : 0;
    // h2/h3 responses are counted per route first, then per protocol: reading those first keeps
    // h1_requests() = total - h2 - h3 from going below zero (and h3 connections before accepted).
    s.h2.requests = h2_requests_.load(std::memory_order_relaxed);
    s.h3.requests = h3_requests_.load(std::memory_order_relaxed);
    s.h3.connections = h3_connections_.load(std::memory_order_relaxed);
    s.h3.handshakes = h3_handshakes_.load(std::memory_order_relaxed);
    s.h3.resumed = h3_resumed_.load(std::memory_order_relaxed);
    s.h3.zero_rtt = h3_zero_rtt_.load(std::memory_order_relaxed);
    s.h3.goaways = h3_goaways_.load(std::memory_order_relaxed);
    s.h2.connections = h2_connections_.load(std::memory_order_relaxed);
    s.h2.streams = h2_streams_.load(std::memory_order_relaxed);
    s.h2.streams_refused = h2_refused_.load(std::memory_order_relaxed);
    s.h2.goaways = h2_goaways_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < requests_.size(); ++i) s.requests[i] = requests_[i].load(std::memory_order_relaxed);
    return s;
}

}  // namespace loadbench::server
