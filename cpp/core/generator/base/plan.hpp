#pragma once
// What every part of a worker reads: the run's plan, immutable once the start flag is raised
// (the flags excepted), and the one clock every timestamp comes from.
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/generator/base/config.hpp"
#include "core/generator/base/schedule.hpp"
#include "core/http/url.hpp"

namespace loadbench::generator {

class TlsContext;  // transports/transport.hpp: a layer above the plan, which only points at it

// CLOCK_MONOTONIC in nanoseconds (vDSO: no system call).
int64_t monotonic_ns() noexcept;

// One request template as HTTP/2 header fields (pseudo-headers first) and body, built once.
struct H2Request {
    std::vector<std::pair<std::string, std::string>> fields;
    std::string body;
};

struct RunPlan {
    // The run's options as asked (EngineConfig): whatever reads an option unchanged (keep-alive,
    // the pipeline, streams, the seed, ...) reads it here; the fields below are only what the
    // engine derived from them.
    EngineConfig options;
    sockaddr_storage address{};
    socklen_t address_len = 0;
    bool tcp = true;  // false: address is an AF_UNIX socket (no TCP socket options apply)
    http::Url url;
    std::vector<std::string> wire_requests;  // serialised once
    std::vector<bool> head_requests;
    bool h2 = false;                     // HTTP/2 (h2c prior knowledge, or ALPN h2 over TLS)
    bool h3 = false;                     // HTTP/3 over QUIC (https:// only; h2_requests are its fields)
    bool h3_verify = false;              // HTTP/3: verify the server's certificate (GnuTLS)
    std::vector<H2Request> h2_requests;  // HTTP/2: the templates as header fields, built once
    const TlsContext* tls = nullptr;     // null: plain TCP
    // Over TLS: the one protocol offered with ALPN (empty: none offered), and what a server that
    // selects another is told - the run's protocol is never negotiated down.
    std::string alpn;
    std::string alpn_refused;
    bool count_mode = false;
    int64_t timeout_ns = 0;  // per request; also how long the run drains after the window
    int64_t connect_retry_delay_ns = 0;
    int64_t interval_ns = 1'000'000'000;
    int64_t last_interval = INT64_MAX;  // outcomes of the drain go into the window's last interval
    bool open_loop = false;
    ArrivalSchedule::Kind arrival = ArrivalSchedule::Kind::Constant;
    double rate_per_worker = 0.0;
    // A load shape (EngineConfig::rate_schedule): the rate along it, all workers together, and
    // its stages' edges in ns from the window's start (stage i: [edges[i], edges[i + 1])).
    RateCurve rate_curve;
    RateCurve connection_curve;  // closed loop: the active connections (EngineConfig::connections_schedule)
    std::vector<int64_t> stage_edges_ns;
    int64_t send_batch_ns = 40'000;  // EngineConfig::send_batch_s
    // Open loop, batch_reads, over TCP without TLS: the loop reads responses when it wakes to
    // send, up to kReadBatchNs later, and times them by their arrival in the kernel (busy-poll:
    // it reads them at once, and still times them by their arrival).
    bool batch_reads = false;
    // Open loop, EngineConfig::busy_poll: the workers never sleep (Worker::run's busy pass).
    bool busy_poll = false;
    // Engine::preconnect: workers open their connections before reporting ready, until then.
    int64_t preconnect_until_ns = 0;
    // Set by the engine before `started` is released.
    int64_t start_ns = 0;
    int64_t window_start_ns = 0;
    int64_t window_end_ns = INT64_MAX;  // INT64_MAX in count mode
    std::atomic<bool> started{false};
    std::atomic<bool> stop{false};

    bool in_window(int64_t t) const noexcept { return t >= window_start_ns && t < window_end_ns; }
};

}  // namespace loadbench::generator
