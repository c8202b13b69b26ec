#pragma once
// The one place outcomes become numbers: latency histograms (corrected, service, lateness),
// exact status counts, errors by kind, bytes, connections, the per-interval timeline and the
// live progress counters. Every request counted in the window reaches exactly one of
// response(), error() or unfinished(). A new metric touches this class and the result schema.
#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "core/generator/base/config.hpp"
#include "core/generator/base/plan.hpp"
#include "core/generator/base/request.hpp"
#include "core/stats/timeline.hpp"

namespace loadbench::generator {

class Recorder {
public:
    explicit Recorder(const RunPlan& plan) : plan_(plan) {
        if (plan.stage_edges_ns.size() > 1) m_.stages.resize(plan.stage_edges_ns.size() - 1);
    }

    // Open loop: a request of the window became due; the loop released it at `now`.
    void due(const Request& r, int64_t now) noexcept;
    // Open loop: a request released at once found no free connection and waits in the queue.
    void slot_wait(const Request& r) noexcept { m_.slot_waits += r.counted; }
    // Open loop: a warm-up request still queued when the window opened, dropped unsent.
    void warmup_dropped() noexcept { ++m_.warmup_dropped; }
    // Open loop: the loop woke inside the window (what each response costs is mostly these).
    void wakeup(int64_t now) noexcept { m_.wakeups += plan_.in_window(now); }
    // Busy-poll: a pass that found work took `ns` (those outside the window count nothing).
    void busy_work(int64_t ns, int64_t now) noexcept {
        if (plan_.in_window(now)) m_.busy_work_ns += static_cast<uint64_t>(ns);
    }
    // Open loop: the request's first byte went out (once per request, a re-send is not counted).
    void sent(Request& r, int64_t now) noexcept;
    // A response's last byte arrived at `now`: its latency, status and phases (write, time to
    // first byte, transfer: what its session stamped on it).
    void response(const Request& r, int status, int64_t now) noexcept;
    // A new connection's set-up phase (connect, a TLS or QUIC handshake) took `ns`; counted as
    // the connection or its handshake is.
    void connection_phase(Phase phase, bool counted, int64_t ns) noexcept;
    void error(const Request& r, ErrorKind kind, const std::string& why, int64_t now);
    // An error no request is charged with (a pool connection that failed with nothing queued).
    void note_error(const std::string& why, int64_t now);
    // The drain ended without an outcome. Open loop: it enters the corrected histogram with the
    // time it had waited so far (a lower bound of its latency).
    void unfinished(const Request& r, int64_t now) noexcept;

    void bytes_read(size_t n) noexcept { m_.bytes_read += n; }
    void bytes_written(size_t n) noexcept { m_.bytes_written += n; }
    // HTTP/3: one UDP datagram of n bytes. Its bytes count as TCP's do (while the connection
    // carries a counted request); the datagram itself whenever it passes inside the window -
    // the handshake's, and the ACKs that follow a response, are datagrams of the run too.
    void datagram_sent(size_t n, bool counted, int64_t now) noexcept {
        if (counted) m_.bytes_written += n;
        m_.quic_datagrams_sent += plan_.in_window(now);
    }
    void datagram_received(size_t n, bool counted, int64_t now) noexcept {
        if (counted) m_.bytes_read += n;
        m_.quic_datagrams_received += plan_.in_window(now);
    }
    // HTTP/3: one send()/sendmsg() of datagrams (several at once with GSO).
    void send_call(int64_t now) noexcept { m_.quic_send_calls += plan_.in_window(now); }
    // HTTP/3: one recvmsg() that returned datagrams (several at once with GRO).
    void receive_call(int64_t now) noexcept { m_.quic_receive_calls += plan_.in_window(now); }
    void udp_gro(bool on) noexcept { m_.udp_gro = m_.udp_gro || on; }
    // HTTP/3: the UDP socket buffers a connection was granted (the run keeps the smallest).
    void udp_buffers(uint64_t receive, uint64_t send) noexcept {
        if (receive != 0 && (m_.udp_receive_buffer == 0 || receive < m_.udp_receive_buffer))
            m_.udp_receive_buffer = receive;
        if (send != 0 && (m_.udp_send_buffer == 0 || send < m_.udp_send_buffer)) m_.udp_send_buffer = send;
    }
    void connection_opened(bool counted) noexcept { m_.connections_opened += counted; }
    void tls_handshake(bool counted, bool resumed) noexcept {
        m_.tls_handshakes += counted;
        m_.tls_resumed += counted && resumed;
    }
    void early_data(bool counted, EarlyData outcome) noexcept {
        if (!counted || outcome == EarlyData::NotAttempted) return;
        ++m_.quic_zero_rtt_attempted;
        ++(outcome == EarlyData::Accepted ? m_.quic_zero_rtt_accepted : m_.quic_zero_rtt_rejected);
    }
    void reconnect(bool counted) noexcept { m_.reconnects += counted; }
    void goaway(bool counted) noexcept { m_.goaways += counted; }
    void retried(bool counted) noexcept { m_.retried += counted; }
    void stream_reset(uint32_t code, bool counted) noexcept {
        m_.streams_reset[code < kH2ErrorCodes - 1 ? code : kH2ErrorCodes - 1] += counted;
    }

    // Closes the timeline; call once when the worker stops.
    void finish() { timeline_.flush(); }

    Measurements& measurements() noexcept { return m_; }
    std::vector<stats::IntervalSnapshot>& timeline() noexcept { return timeline_.snapshots(); }
    int64_t last_outcome_ns() const noexcept { return last_outcome_ns_; }

    // Progress, readable from any thread while running.
    struct alignas(64) Live {
        std::atomic<uint64_t> responses{0};
        std::atomic<uint64_t> errors{0};
        // every response, in the window or not: a sampler's snapshots bracket a span of their
        // own (taken when its thread runs, not at the window's edges), and its per-request
        // figures divide by the responses completed in that same span
        std::atomic<uint64_t> completed{0};
    };
    const Live& live() const noexcept { return live_; }

private:
    // A load shape's stage of a counted request: the one it was due in (nullptr: no shape).
    StageMeasurements* stage_of(const Request& r) noexcept {
        if (m_.stages.empty()) return nullptr;
        const auto& edges = plan_.stage_edges_ns;
        const auto inner = std::upper_bound(edges.begin() + 1, edges.end() - 1, r.intended_ns - plan_.window_start_ns);
        return &m_.stages[static_cast<size_t>(inner - (edges.begin() + 1))];
    }

    int64_t interval_of(int64_t now) const noexcept {
        const int64_t i = (now - plan_.window_start_ns) / plan_.interval_ns;
        return i < 0 ? 0 : (i > plan_.last_interval ? plan_.last_interval : i);
    }

    const RunPlan& plan_;
    Measurements m_;
    stats::IntervalRecorder timeline_;
    Live live_;
    uint64_t error_total_ = 0;
    uint64_t completed_total_ = 0;
    int64_t last_outcome_ns_ = 0;
    int64_t last_due_ns_ = 0;   // the schedule audit: the previous counted due time
    int64_t last_sent_ns_ = 0;  // and the previous counted send
};

}  // namespace loadbench::generator
