#pragma once
// One worker = one thread: its event loop, its share of the connections, its Scheduler and its
// Recorder. It hands due requests to free request slots, settles every outcome, keeps the
// window exact (nothing new starts after it; the requests of the window drain up to the
// timeout; what is left is `unfinished`) and checks timeouts. Nothing on the request path is
// shared with other workers: the only cross-thread traffic is the stop flag (read) and the
// progress counters (relaxed stores).
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/generator/loop/connection.hpp"
#include "core/generator/loop/event_loop.hpp"
#include "core/generator/base/plan.hpp"
#include "core/generator/base/recorder.hpp"
#include "core/generator/quic/udp_drops.hpp"
#include "core/generator/loop/scheduler.hpp"

namespace loadbench::generator {

class Worker final : private ConnectionEvents, private BetweenEvents {
public:
    // connections: the initial pool; max_connections: how far an open-loop pool may grow.
    Worker(const RunPlan& plan, int index, int connections, int max_connections, int64_t budget, int cpu);
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    // Thread body: set up, report ready, wait for the start flag, run until the drain ends.
    void run(std::atomic<int>& ready_count);

    // Valid after run() returned.
    Measurements& measurements() noexcept { return recorder_.measurements(); }
    std::vector<stats::IntervalSnapshot>& timeline() noexcept { return recorder_.timeline(); }
    double cpu_s() const noexcept { return cpu_s_; }
    // HTTP/3, the first worker only: the kernel's UDP drop counters when its window opened.
    const UdpDrops& udp_drops_at_window_start() const noexcept { return udp_at_window_start_; }
    int64_t last_outcome_ns() const noexcept { return recorder_.last_outcome_ns(); }
    const std::string& setup_error() const noexcept { return setup_error_; }
    const Recorder::Live& live() const noexcept { return recorder_.live(); }
    // Connections open when the worker reported ready (RunPlan::preconnect_until_ns set).
    int preconnected() const noexcept { return preconnected_; }
    // Open loop: the connections its pool holds (the first ones and those it grew by).
    int pool_size() const noexcept { return static_cast<int>(connections_.size()); }

private:
    // ConnectionEvents
    void on_tcp_connected(Connection& c, int64_t now) noexcept override;
    void on_ready(Connection& c, int64_t now) override;
    void on_response(Connection& c, Request& r, int status, int64_t now) noexcept override;
    void on_answered(Connection& c, int64_t now) override;
    void on_lost(Connection& c, ErrorKind kind, const std::string& why, int64_t now) override;
    void on_idle_closed(Connection& c, int64_t now) override;
    void on_mid_response(bool mid) noexcept override { mid_responses_ += mid ? 1 : -1; }
    void on_read_timed(bool timed) noexcept override { reads_timed_ = timed; }
    void on_refused(Connection& c, Request& r, int64_t now) noexcept override;
    void on_stream_error(Connection& c, Request& r, const std::string& why, int64_t now) noexcept override;
    // BetweenEvents (busy-poll): a send that fell due while a burst of responses is read goes
    // out before the rest of the burst (a burst of 20 reads is ~60 us on a VM).
    void between_events() noexcept override;

    Connection& add_connection();
    // Before the start flag: opens every connection and runs the loop until each is open (TLS
    // handshake done), failed, or the plan's pre-connect deadline passes. Nothing is counted:
    // the window has not begun; what failed is opened again, counted, once it has.
    void preconnect();
    // Gives `r` to `c` (opening it first when closed) and writes it if it can.
    void assign(Connection& c, const Request& r, int64_t now, bool write_now = true);
    // Closed loop: fill c's free slots with new requests.
    void next_closed(Connection& c, int64_t now);
    // Open loop: queue what is due, hand it to free slots, grow the pool. How many it released.
    size_t release_due(int64_t now);
    void dispatch(int64_t now);
    void mark_ready(Connection& c);
    // Open loop: `waiting` has waited for a free slot longer than a late send, and the loop is
    // on time (its last wake-up released its first due request within a late send's threshold).
    bool pool_starved(const Request& waiting, int64_t now) const noexcept;
    void open_pool_connection(Connection& c, int64_t now);
    void fail_queued_request(const std::string& why, int64_t now);
    // Open loop, when the window opens: the warm-up's requests still queued are dropped.
    void drop_warmup_backlog() noexcept;
    // batch_reads: whether this pass sleeps until `wake` and reads then, instead of waiting on I/O.
    bool batches_reads(int64_t now, int64_t wake) noexcept;
    static void sleep_until(int64_t at_ns) noexcept;
    // Takes c's requests that were never answered (behind a response that ended a pipelined
    // connection) and puts them first in the queue, in order, to go out again.
    void requeue_unanswered(Connection& c);
    // Puts resend_ first in the queue, oldest first.
    void requeue_front(int64_t now);
    void housekeeping(int64_t now);
    // Closed loop along a connections schedule: this worker's share of its count at `now`, and
    // parked connections started again when it grew (they park themselves as it shrinks).
    int active_at(int64_t now) const noexcept;
    void update_active(int64_t now);
    void expire_streams(Connection& c, int64_t now);
    void settle_unfinished(int64_t now);
    bool finished(int64_t now) const noexcept;

    const RunPlan& plan_;
    int index_;
    int cpu_;
    int max_connections_;
    EventLoop loop_;
    Recorder recorder_;
    Scheduler scheduler_;
    std::unique_ptr<char[]> read_buffer_;
    static constexpr size_t kReadCapacity = 256 * 1024;
    std::vector<std::unique_ptr<Connection>> connections_;
    std::vector<Connection*> ready_;  // open loop: connected with free slots (entries may be stale)
    std::vector<Request> resend_;     // requests of a lost connection to send again, oldest first
    int connecting_ = 0;              // open loop: pool connections on their way
    int mid_responses_ = 0;           // batch_reads: connections holding part of a response
    bool reads_timed_ = false;        // batch_reads: the last read had its arrival time
    int64_t loop_late_ns_ = 0;        // open loop: how late the last wake-up that released found its first due request
    bool preconnecting_ = false;      // inside preconnect(): the events count nothing
    int preconnected_ = 0;
    int64_t counted_in_flight_ = 0;  // counted requests held by sessions
    int active_ = INT32_MAX;         // closed loop: connections with slot < active_ send (a connections schedule)
    double cpu_s_ = 0.0;
    UdpDrops udp_at_window_start_;
    std::string setup_error_;
};

}  // namespace loadbench::generator
