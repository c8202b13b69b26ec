#pragma once
// What answering a request needs from its worker, and nothing more: the limits, the
// counters, the Date value, the worker's coarse clock and whether the server is stopping.
// It names no protocol: HTTP/1.1's own per-worker state (h1/http1_state.hpp) is kept here
// by a pointer whose type only h1/ defines.
//
// Protocol sessions (RequestProcessor for HTTP/1.1, Http2Session) take this narrow context
// instead of the whole Worker, so a test or a fuzzer builds one without event loops or
// sockets. The worker owns one and is its only writer (one thread).
#include "core/server/base/config.hpp"
#include "core/server/base/counters.hpp"
#include "core/server/app/http_date.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace loadbench::server {

struct Http1State;  // h1/http1_state.hpp

struct HandlerContext {
    using clock = std::chrono::steady_clock;

    explicit HandlerContext(const ServerConfig& server_config) : config(server_config) {}
    HandlerContext(const HandlerContext&) = delete;
    HandlerContext& operator=(const HandlerContext&) = delete;

    // The worker's housekeeping tick: a new coarse time, and the Date second may have changed.
    void tick(clock::time_point t) {
        now = t;
        if (date.refresh()) ++response_epoch;
    }
    // --h3: every HTTP/1.1 and HTTP/2 response says where HTTP/3 is (RFC 7838, RFC 9114 3.1.1).
    void advertise_http3(std::uint16_t port) {
        alt_svc = "h3=\":" + std::to_string(port) + "\"";
        ++response_epoch;
    }
    std::string_view date_value() const { return date.value(); }

    const ServerConfig& config;
    WorkerCounters counters;
    DateCache date;
    // Refreshed on every tick: deadlines are coarse on purpose (no clock read per request).
    clock::time_point now = clock::now();
    bool stopping = false;
    std::string alt_svc;  // the Alt-Svc value; empty: none
    // Changes whenever the Date value or Alt-Svc does: what was prebuilt for another is stale.
    std::uint32_t response_epoch = 1;
    // HTTP/1.1's prebuilt responses and parser pool, made by h1/ on first use.
    std::unique_ptr<Http1State, void (*)(Http1State*)> http1{nullptr, nullptr};
};

}  // namespace loadbench::server
