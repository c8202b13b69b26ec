#include "core/server/base/counters.hpp"

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
#define LOADBENCH_COUNTER_SUM(protocol, name, one, meaning) protocol.name += other.protocol.name;
    LOADBENCH_SERVER_PROTOCOL_COUNTERS(LOADBENCH_COUNTER_SUM)
#undef LOADBENCH_COUNTER_SUM
    return *this;
}

CountersSnapshot WorkerCounters::snapshot() const {
    CountersSnapshot s;
    // A protocol's counter is bumped after the total it is part of (its connection after
    // connection_opened, its response after the route's), so reading every protocol counter
    // before the totals keeps h1_connections() and h1_requests() (the totals minus h2 and h3)
    // from going below zero; closed is read before accepted for the same reason.
#define LOADBENCH_COUNTER_LOAD(protocol, name, one, meaning) \
    s.protocol.name = protocol##_##name##_.load(std::memory_order_relaxed);
    LOADBENCH_SERVER_PROTOCOL_COUNTERS(LOADBENCH_COUNTER_LOAD)
#undef LOADBENCH_COUNTER_LOAD
    const auto closed = closed_.load(std::memory_order_relaxed);
    s.connections_accepted = accepted_.load(std::memory_order_relaxed);
    s.connections_open = s.connections_accepted >= closed ? s.connections_accepted - closed : 0;
    for (std::size_t i = 0; i < requests_.size(); ++i) s.requests[i] = requests_[i].load(std::memory_order_relaxed);
    return s;
}

}  // namespace loadbench::server
