#pragma once
// What a run is asked to do, and what it measured.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/http/request_template.hpp"
#include "core/stats/hdr_histogram.hpp"
#include "core/stats/timeline.hpp"

namespace loadbench::generator {

// The run's options, each declared once: X(type, name, default, help). Each line becomes an
// EngineConfig field, its Python binding with the help as its docstring, and an entry of
// loadbench._core.ENGINE_OPTIONS (name, default, help) - from which loadbench.RunOptions takes the
// default and the help of every option it passes through unchanged, and so the `run` flag, the
// sweep's [run] table and the result's `config` block. A new option is this line plus its use.
// (Types with a comma in them go through the aliases below: a macro argument cannot hold one.)
using RequestTemplates = std::vector<http::RequestTemplate>;
using SchedulePoints = std::vector<std::pair<double, double>>;
inline constexpr int kDefaultH2WindowBits = 30;  // h2load's default for -w and -W
#define LOADBENCH_ENGINE_OPTIONS(X)                                                                                    \
    X(std::string, url, "", "the URL: its scheme, host, port and path")                                                \
    X(std::string, unix_socket, "",                                                                                    \
      "connect to this unix socket instead of the URL's host and port, which still give the scheme, the Host "         \
      "header and the path (oha's and curl's --unix-socket)")                                                          \
    X(RequestTemplates, requests, {}, "request templates, used round-robin per connection; empty: one GET of the URL") \
    X(int, connections, 10, "concurrent connections (closed loop); the open loop's starting pool")                     \
    X(int, threads, 1, "generator threads, each one event loop")                                                       \
    X(double, duration_s, 10.0, "measured window in seconds (ignored when total_requests > 0)")                        \
    X(int64_t, total_requests, 0, "> 0: exactly this many responses + errors, then stop")                              \
    X(double, warmup_s, 0.0, "warm-up in seconds, excluded from every figure")                                         \
    X(double, timeout_s, 10.0, "per-request timeout in seconds, connect and handshake included")                       \
    X(bool, keepalive, true, "keep connections open; false: a new connection (and TLS handshake) per request")         \
    X(bool, tls_verify, false, "check the server's certificate")                                                       \
    X(std::string, tls_cacert, "", "check the server's certificate against this CA file (implies tls_verify)")         \
    X(bool, tls_session_resumption, false,                                                                             \
      "resume TLS sessions (default: a full handshake each time); over HTTP/3 with the server's QUIC session "         \
      "tickets")                                                                                                       \
    X(bool, quic_early_data, false,                                                                                    \
      "HTTP/3 with tls_session_resumption: send a resumed connection's first requests as 0-RTT early data "            \
      "(replayable by anyone on the path: the method asked for is sent as it is)")                                     \
    X(std::string, tls_library, "openssl",                                                                             \
      "the generator's TLS library: openssl, wolfssl or rustls (cheaper full handshakes, where the build has them)")   \
    X(bool, ack_with_request, false,                                                                                   \
      "TCP: the handshake's last ACK rides on the first request (closed loop only): one packet fewer per new "         \
      "connection")                                                                                                    \
    X(bool, rst_close, false, "TCP: close a connection the server already closed with RST, not FIN")                   \
    X(std::vector<int>, cpus, {}, "pin the generator threads to these CPUs (worker i on cpus[i % size])")              \
    X(double, interval_s, 1.0, "timeline interval in seconds")                                                         \
    X(double, connect_retry_delay_s, 0.005, "after a failed connect, so a refused port is not a busy loop")            \
    X(double, rate, 0.0,                                                                                               \
      "open loop: requests per second in total, whatever the server does; latency counts from the intended send "      \
      "time (0: closed loop)")                                                                                         \
    X(SchedulePoints, rate_schedule, {},                                                                               \
      "open loop along a load shape: (seconds from the window's start, total requests per second) points, the "        \
      "rate piecewise linear between them (two points at one time: a step); each stretch is a stage")                  \
    X(SchedulePoints, connections_schedule, {},                                                                        \
      "closed loop with a changing number of active connections: (seconds, connections) points, piecewise linear "     \
      "between them; connections must be its most")                                                                    \
    X(bool, poisson, false, "open loop: Poisson arrivals instead of constant ones")                                    \
    X(uint64_t, seed, 1, "seed of the Poisson arrival schedule")                                                       \
    X(int, max_connections, 0,                                                                                         \
      "open loop: grow the pool up to this many connections when all are busy (0: no growth)")                         \
    X(double, send_batch_s, 40e-6,                                                                                     \
      "open loop: requests due within this span go out in one wake-up when they come closer together than it "         \
      "(larger: less generator CPU per request at moderate rates, and up to that much more send lateness, "            \
      "measured and in the corrected latency)")                                                                        \
    X(bool, busy_poll, false,                                                                                          \
      "open loop: each worker thread polls and never sleeps (the clock read and epoll_wait with no timeout, every "    \
      "pass): sends go out within microseconds of their due time, and the thread takes its whole CPU - for CPUs the "  \
      "generator has to itself (loadbench's default when it is pinned to such CPUs)")                                  \
    X(bool, batch_reads, true,                                                                                         \
      "open loop over TCP without TLS (HTTP/1.1, h2c): read the responses when the loop wakes to send (at most 1 ms "  \
      "later) instead of waking for each, timing each by its arrival in the kernel (SO_TIMESTAMPNS): a response "      \
      "costs no wake-up of its own and its latency stays exact")                                                       \
    X(bool, h2, false, "HTTP/2: h2c with prior knowledge for http://, ALPN h2 (only) for https://")                    \
    X(bool, h3, false, "HTTP/3 over QUIC: https:// only, ALPN h3 only (a build with ngtcp2 and nghttp3)")              \
    X(int, streams, 1, "HTTP/2 or HTTP/3 streams in flight per connection (h2load's -m)")                              \
    X(int, h2_window_bits, kDefaultH2WindowBits,                                                                       \
      "HTTP/2: the flow-control windows this client offers for each stream and for the connection, 2^N - 1 bytes "     \
      "(h2load's -w and -W; 1-30)")                                                                                    \
    X(int, pipeline, 1,                                                                                                \
      "HTTP/1.1 pipelining: requests written back to back per connection, answered in order (wrk's pipeline "          \
      "depth; needs keep-alive)")

struct EngineConfig {
#define LOADBENCH_ENGINE_OPTION_FIELD(type, name, value, help) type name = value;
    LOADBENCH_ENGINE_OPTIONS(LOADBENCH_ENGINE_OPTION_FIELD)
#undef LOADBENCH_ENGINE_OPTION_FIELD
};

// A request that went out more than this after its intended time counts as a late send.
inline constexpr int64_t kLateSendNs = 1'000'000;
// batch_reads: how long the open loop leaves responses unread at most, until its next send. A
// bound, so a large response never waits on a full receive buffer for long.
inline constexpr int64_t kReadBatchNs = 1'000'000;

// HTTP/2 error codes NO_ERROR (0) .. HTTP_1_1_REQUIRED (0xd), plus one for unknown codes.
inline constexpr size_t kH2ErrorCodes = 15;

enum ErrorKind : int { kConnect = 0, kRead, kWrite, kTimeout, kParse, kErrorKinds };
inline constexpr std::array<const char*, kErrorKinds> kErrorKindNames = {"connect", "read", "write", "timeout",
                                                                         "parse"};

// Where the time goes, one HDR histogram (microseconds) per phase, X(name, doc). A new
// connection's set-up phases count as connections_opened and tls_handshakes do; a request's
// phases count with its response (counted in the window, measured to its last byte). Beside
// the latency they decompose: a response's write + ttfb + transfer is its service time (the
// uncorrected latency), and what the corrected latency adds is the open loop's send lateness.
// The Measurements array, its merge, its binding and the Result's `phases` block come from
// this list.
#define LOADBENCH_PHASES(X)                                                                                     \
    X(connect, "new TCP connection: connect() until the connection is up (its writable edge)")                  \
    X(tls_full, "new TLS connection, full handshake: TCP up until the handshake is done")                       \
    X(tls_resume, "new TLS connection, resumed session: TCP up until the handshake is done")                    \
    X(quic_full, "new QUIC connection, full handshake: the socket opened until the handshake is done")          \
    X(quic_resume, "new QUIC connection, resumed session (0-RTT or not): the socket opened until it is done")   \
    X(write, "request: its first byte handed to the transport until its last (HTTP/2, HTTP/3: its END_STREAM)") \
    X(ttfb, "request: its last byte written until the first byte of its response arrived (time to first byte)") \
    X(transfer, "response: its first byte until its last")

enum Phase : int {
#define LOADBENCH_PHASE_ENUM(name, doc) kPhase_##name,
    LOADBENCH_PHASES(LOADBENCH_PHASE_ENUM)
#undef LOADBENCH_PHASE_ENUM
        kPhases
};
inline constexpr std::array<const char*, kPhases> kPhaseNames = {
#define LOADBENCH_PHASE_NAME(name, doc) #name,
    LOADBENCH_PHASES(LOADBENCH_PHASE_NAME)
#undef LOADBENCH_PHASE_NAME
};
inline constexpr std::array<const char*, kPhases> kPhaseDocs = {
#define LOADBENCH_PHASE_DOC(name, doc) doc,
    LOADBENCH_PHASES(LOADBENCH_PHASE_DOC)
#undef LOADBENCH_PHASE_DOC
};

// The run's plain counters, one line each: the Measurements field, its merge across workers and
// its Python binding (bindings/register_generator.cpp) all come from this list, so a new counter
// is recorded by the Recorder, declared here, and shown where a reader sees it - nothing else.
// The order is the order of the Result JSON's keys for the counters it does not place itself.
#define LOADBENCH_COUNTERS(X)                                                                                          \
    X(responses, "responses inside the window")                                                                        \
    X(unfinished, "counted requests without a response or an error when the drain ended")                              \
    X(bytes_read, "bytes read inside the window")                                                                      \
    X(bytes_written, "bytes written inside the window")                                                                \
    X(connections_opened, "connections opened inside the window")                                                      \
    X(tls_handshakes, "TLS handshakes completed inside the window")                                                    \
    X(tls_resumed, "of those, abbreviated (the session was resumed)")                                                  \
    X(reconnects, "connections the server closed (or asked to close) that were reopened")                              \
    X(goaways, "HTTP/2 GOAWAY frames received")                                                                        \
    X(retried, "HTTP/2 requests the server refused unprocessed, sent again")                                           \
    X(quic_datagrams_sent, "HTTP/3: UDP datagrams sent inside the window (all)")                                       \
    X(quic_datagrams_received, "HTTP/3: UDP datagrams received inside the window (all)")                               \
    X(quic_send_calls, "HTTP/3: send/sendmsg calls inside the window (GSO: several datagrams each)")                   \
    X(quic_receive_calls, "HTTP/3: recvmsg calls that returned datagrams inside the window")                           \
    X(quic_zero_rtt_attempted, "HTTP/3: connections whose first requests went out as 0-RTT")                           \
    X(quic_zero_rtt_accepted, "HTTP/3: of those, the server accepted the early data")                                  \
    X(quic_zero_rtt_rejected, "HTTP/3: of those, rejected: their requests went again in 1-RTT")                        \
    X(due, "open loop: requests due inside the window")                                                                \
    X(sends, "open loop: of those, requests written (each once)")                                                      \
    X(late_sends, "open loop: sends more than kLateSendNs after their intended time")                                  \
    X(slot_waits, "open loop: due requests that found every connection busy and queued for one")                       \
    X(warmup_dropped, "open loop: warm-up requests still queued when the window opened, dropped unsent")               \
    X(wakeups,                                                                                                         \
      "open loop: the event loop's passes inside the window (each after one wait: for I/O, a timer or the next send)") \
    X(busy_work_ns,                                                                                                    \
      "open loop, busy-poll: nanoseconds of the window's passes that found work (I/O, a timer, a due send); the "      \
      "rest of the thread's CPU went to polling")

// Open loop, the schedule audit: the gaps between a worker's consecutive due times (the asked
// arrival process) and between its consecutive sends (what the server was sent), counted in
// quarter-octave buckets - bucket 0 below 256 ns, then four per doubling, the last 1 s and over.
// Comparing the two distributions says whether the sends followed the asked arrivals (a loop
// that sends in bursts can keep every send within its lateness bar and still not).
inline constexpr size_t kGapBuckets = 96;
inline size_t gap_bucket(int64_t ns) noexcept {
    if (ns < 256) return 0;
    const int octave = 63 - __builtin_clzll(static_cast<unsigned long long>(ns));  // >= 8
    const size_t quarter = static_cast<size_t>(ns >> (octave - 2)) & 3;
    const size_t bucket = 1 + static_cast<size_t>(octave - 8) * 4 + quarter;
    return bucket < kGapBuckets ? bucket : kGapBuckets - 1;
}
using GapCounts = std::array<uint64_t, kGapBuckets>;

// A load shape's stage: its requests (those due in it), whenever their outcome came.
struct StageMeasurements {
    stats::HdrHistogram latency_us;  // from the intended time (corrected)
    uint64_t due = 0;
    uint64_t sends = 0;
    uint64_t responses = 0;
    uint64_t errors = 0;
    uint64_t unfinished = 0;

    void add(const StageMeasurements& other);
};

// Everything one worker measured inside the window; merged into the run's result.
struct Measurements {
    stats::HdrHistogram latency_us;              // closed loop: service time; open loop: from the intended time
    stats::HdrHistogram latency_uncorrected_us;  // open loop only: from the actual send
    stats::HdrHistogram lateness_us;             // open loop only: actual send - intended send
    // Open loop only: when the worker's loop released a due request - its intended time. The
    // generator's own delay (a busy or descheduled loop); the rest of `lateness_us` is the wait
    // for a free connection (slot_waits) and the write.
    stats::HdrHistogram loop_lateness_us;
    std::array<stats::HdrHistogram, kPhases> phases_us;  // LOADBENCH_PHASES, in its order
#define LOADBENCH_COUNTER_FIELD(name, doc) uint64_t name = 0;
    LOADBENCH_COUNTERS(LOADBENCH_COUNTER_FIELD)
#undef LOADBENCH_COUNTER_FIELD
    GapCounts due_gaps{};  // open loop: the schedule audit (gap_bucket), counted requests
    GapCounts send_gaps{};
    std::array<uint64_t, 1000> status_codes{};
    std::array<uint64_t, kErrorKinds> errors{};
    // HTTP/2 RST_STREAM frames received, by error code (the last entry: codes above 0xd).
    std::array<uint64_t, kH2ErrorCodes> streams_reset{};
    std::string first_error;                // the first error message seen, for the summary
    std::vector<StageMeasurements> stages;  // a load shape's stages (RunPlan::stage_edges_ns), else empty
    // HTTP/3: the smallest UDP socket buffers the kernel granted a connection (getsockopt after
    // asking for kUdpBuffer; 0: no UDP socket was opened). Merged as the minimum.
    uint64_t udp_receive_buffer = 0;
    uint64_t udp_send_buffer = 0;
    bool udp_gro = false;  // HTTP/3: UDP GRO was on for some connection (LOADBENCH_UDP_GRO=0: never)

    void add(const Measurements& other);
};

struct RunResult {
    Measurements totals;
    std::vector<stats::TimelineRow> timeline;
    double interval_s = 1.0;
    double duration_s = 0.0;  // the measured window
    double warmup_s = 0.0;
    double cpu_s = 0.0;  // generator threads' CPU time inside the window
    int threads = 0;
    bool interrupted = false;  // stopped before the planned end
    bool open_loop = false;
    double target_rate = 0.0;  // along a load shape: its mean over the window
    int max_connections = 0;
    int pool_size = 0;     // open loop: connections the pool held at the end (it never shrinks)
    int preconnected = 0;  // connections open before the start (Engine::preconnect)
    // HTTP/3: the kernel's UDP receive drops (machine-wide, udp_drops.hpp) from the window's
    // start until the workers stopped; measured only when /proc/net/snmp could be read both times.
    bool udp_drops_measured = false;
    uint64_t udp_in_errors = 0;
    uint64_t udp_rcvbuf_errors = 0;
};

struct Progress {
    double elapsed_s = 0.0;  // since the start (warm-up included)
    bool warming_up = true;
    bool finished = false;
    uint64_t responses = 0;  // inside the window so far
    uint64_t errors = 0;
    uint64_t completed = 0;  // every response so far, warm-up and drain included
};

}  // namespace loadbench::generator
