#pragma once
// What answering a request needs from its worker, and nothing more: the limits, the
// counters, the Date value and the prebuilt HTTP/1.1 responses, the worker's coarse clock
// and whether the server is stopping.
//
// Protocol sessions (RequestProcessor for HTTP/1.1, Http2Session) take this narrow context
// instead of the whole Worker, so a test or a fuzzer builds one without event loops or
// sockets. The worker owns one and is its only writer (one thread).
#include "core/server/config.hpp"
#include "core/server/counters.hpp"
#include "core/server/app/http_date.hpp"
#include "core/server/h1/request_parser.hpp"
#include "core/server/h1/responses.hpp"

#include <chrono>
#include <string>
#include <string_view>

namespace loadbench::server {

struct HandlerContext {
    using clock = std::chrono::steady_clock;

    explicit HandlerContext(const ServerConfig& server_config) : config(server_config) {
        responses.rebuild(date.value(), alt_svc);
    }
    HandlerContext(const HandlerContext&) = delete;
    HandlerContext& operator=(const HandlerContext&) = delete;

    // The worker's housekeeping tick: a new coarse time, and the Date second may have changed.
    void tick(clock::time_point t) {
        now = t;
        if (date.refresh()) responses.rebuild(date.value(), alt_svc);
    }
    // --h3: every HTTP/1.1 and HTTP/2 response says where HTTP/3 is (RFC 7838, RFC 9114 3.1.1).
    void advertise_http3(std::uint16_t port) {
        alt_svc = "h3=\":" + std::to_string(port) + "\"";
        responses.rebuild(date.value(), alt_svc);
    }
    std::string_view date_value() const { return date.value(); }

    const ServerConfig& config;
    WorkerCounters counters;
    DateCache date;
    ResponseCache responses;
    // Refreshed on every tick: deadlines are coarse on purpose (no clock read per request).
    clock::time_point now = clock::now();
    bool stopping = false;
    std::string alt_svc;  // the Alt-Svc value; empty: none
    // Parsers for the HTTP/1.1 requests in progress (RequestProcessor takes and gives back).
    RequestStatePool request_states;
};

}  // namespace loadbench::server
