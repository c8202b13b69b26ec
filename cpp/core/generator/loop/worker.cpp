#include "core/generator/loop/worker.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

namespace loadbench::generator {

namespace {

double thread_cpu_s() noexcept {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr int64_t kHousekeepingNs = 10'000'000;  // timeouts and retries are checked every 10 ms
constexpr size_t kTakeBatch = 64;                // requests taken back from a session at once

}  // namespace

Worker::Worker(const RunPlan& plan, int index, int connections, int max_connections, int64_t budget, int cpu)
    : plan_(plan),
      index_(index),
      cpu_(cpu),
      max_connections_(max_connections),
      recorder_(plan),
      scheduler_(plan, index, budget),
      read_buffer_(std::make_unique<char[]>(kReadCapacity)) {
    connections_.reserve(static_cast<size_t>(std::max(connections, max_connections)));
    resend_.reserve(
        static_cast<size_t>(std::max({plan.options.pipeline, plan.options.streams, 1})));  // a connection's worth
    for (int i = 0; i < connections; ++i) add_connection();
}

Worker::~Worker() {
    for (auto& c : connections_) c->close();
}

Connection& Worker::add_connection() {
    connections_.push_back(std::make_unique<Connection>(plan_, loop_, recorder_, static_cast<ConnectionEvents&>(*this),
                                                        read_buffer_.get(), kReadCapacity));
    connections_.back()->slot = static_cast<int>(connections_.size()) - 1;
    return *connections_.back();
}

void Worker::run(std::atomic<int>& ready_count) {
    // A peer that resets the connection must give EPIPE, not kill the process.
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, nullptr);
    if (cpu_ >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu_, &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
            setup_error_ = "cannot pin worker " + std::to_string(index_) + " to CPU " + std::to_string(cpu_);
    }
    if (!loop_.error().empty() && setup_error_.empty()) setup_error_ = loop_.error();
    if (setup_error_.empty() && plan_.preconnect_until_ns) preconnect();
    ready_count.fetch_add(1);
    ready_count.notify_all();
    plan_.started.wait(false);
    if (!setup_error_.empty()) return;

    // Sends are due at exact times: the default 50 us timer slack would make every one late.
    if (plan_.open_loop) prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    scheduler_.begin();
    int64_t now = monotonic_ns();
    if (!plan_.connection_curve.empty()) active_ = active_at(now);
    for (size_t i = 0; i < connections_.size(); ++i) {
        if (plan_.open_loop) {
            if (connections_[i]->state() == Connection::State::Open) {
                mark_ready(*connections_[i]);  // pre-connected
            } else {
                open_pool_connection(*connections_[i], now);
            }
        } else {
            next_closed(*connections_[i], now);
        }
    }
    const int64_t drain_end = plan_.window_end_ns == INT64_MAX ? INT64_MAX : plan_.window_end_ns + plan_.timeout_ns;
    bool in_window = false;
    double cpu_at_window_start = 0.0;
    int64_t next_housekeeping = now + kHousekeepingNs;
    // Busy-poll: when the pass now ending began, and whether it found work (its time is then the
    // generator's work; an idle pass's is polling).
    int64_t pass_start = now;
    bool worked = false;
    while (true) {
        now = monotonic_ns();
        if (plan_.busy_poll) {
            if (worked) recorder_.busy_work(now - pass_start, now);
            pass_start = now;
            worked = false;
        } else if (plan_.open_loop) {
            recorder_.wakeup(now);  // every pass but the first follows one wait
        }
        if (!in_window && now >= plan_.window_start_ns) {
            in_window = true;
            cpu_at_window_start = thread_cpu_s();
            if (plan_.h3 && index_ == 0) udp_at_window_start_ = read_udp_drops();
            if (plan_.open_loop) drop_warmup_backlog();
        }
        if (plan_.stop.load(std::memory_order_relaxed)) break;
        if (now >= next_housekeeping || now >= drain_end) {
            worked = true;
            housekeeping(now);
            if (!plan_.connection_curve.empty()) update_active(now);  // within 10 ms of the schedule
            next_housekeeping = now + kHousekeepingNs;
        }
        if (plan_.open_loop) worked |= release_due(now) > 0;
        if (finished(now) || now >= drain_end) break;
        if (plan_.busy_poll) {
            // The CPU is the generator's own: no wait, no timer, no wake-up to pay (23-37 us of
            // CPU each on a VM); the next due send is seen on the pass after it falls due.
            worked |= loop_.poll(*this) > 0;
            continue;
        }
        int64_t wake = std::min(next_housekeeping, drain_end);
        if (!in_window) wake = std::min(wake, plan_.window_start_ns);
        if (now < plan_.window_end_ns) wake = std::min(wake, plan_.window_end_ns);
        // Requests waiting for a slot: nothing can go out before a response frees one, so the
        // loop sleeps until I/O instead of waking for each new due time (each wake-up a few us
        // of the generator's CPU, most of it wasted when it was the bottleneck); the requests
        // due meanwhile are released, with their due times, on the next wake-up.
        if (plan_.open_loop && scheduler_.queue_empty()) wake = std::min(wake, scheduler_.next_wake_ns());
        if (batches_reads(now, wake)) {
            // Nothing waits for a slot and the next send is near: sleep until it, then read
            // every response that arrived meanwhile (timed by their arrival) in the same pass.
            // A response no longer costs a wake-up of its own: at 50 000 req/s over 50
            // connections nearly every response had one (the server answers faster than requests
            // come), and a wake-up costs more than reading and sending.
            sleep_until(wake);
            now = monotonic_ns();
            loop_.run_once(now, now, true);
        } else {
            loop_.run_once(now, wake, plan_.open_loop);
        }
    }
    now = monotonic_ns();
    settle_unfinished(now);
    if (in_window) cpu_s_ = thread_cpu_s() - cpu_at_window_start;
    recorder_.finish();
    for (auto& c : connections_) c->close();
}

bool Worker::batches_reads(int64_t now, int64_t wake) noexcept {
    // A request waiting for a slot needs the response that frees one at once, and a connection
    // inside a large response must be read on (its sender may be stopped by a full buffer).
    return plan_.batch_reads && reads_timed_ && scheduler_.queue_empty() && mid_responses_ == 0 && wake > now &&
           wake - now <= kReadBatchNs && loop_.next_timer() >= wake;
}

void Worker::sleep_until(int64_t at_ns) noexcept {
    const timespec at{static_cast<time_t>(at_ns / 1'000'000'000), static_cast<long>(at_ns % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR) {
    }
}

void Worker::drop_warmup_backlog() noexcept {
    // The warm-up's requests still waiting for a connection when the window opens are dropped,
    // not sent: a backlog a cold server built in the warm-up (a fresh Python server at 93 % of
    // its CPU drains one at 7 % of its rate, for seconds) would otherwise hold up every request
    // of the window behind it and be read as the window's latency. Those already sent are
    // answered as usual; a server that cannot keep up in the window builds its own backlog there.
    RequestQueue& queue = scheduler_.queue();
    while (!queue.empty() && !queue.front().counted) {
        queue.pop_front();
        recorder_.warmup_dropped();
    }
}

void Worker::preconnect() {
    preconnecting_ = true;
    std::string why;
    for (auto& c : connections_)
        if (!c->open(why)) c->close();
    auto pending = [this] {
        for (auto& c : connections_)
            if (c->state() == Connection::State::Connecting || c->state() == Connection::State::Handshaking)
                return true;
        return false;
    };
    for (int64_t now = monotonic_ns(); pending() && now < plan_.preconnect_until_ns; now = monotonic_ns())
        loop_.run_once(now, plan_.preconnect_until_ns, false);
    for (auto& c : connections_) {
        if (c->state() == Connection::State::Open) {
            ++preconnected_;
            c->opened_ahead();
        } else {
            c->close();  // not open in time: opened again, and counted, in the run
        }
    }
    preconnecting_ = false;
}

bool Worker::finished(int64_t now) const noexcept {
    if (!scheduler_.exhausted(now) || counted_in_flight_ > 0) return false;
    // With a request count every request is sent, however late; a timed window's end stops
    // new sends, so what still waits in the queue then is unfinished.
    // Closed loop: the queue holds only requests to send again (refused by an HTTP/2 server, never
    // answered on a lost or closed connection), sent in the drain.
    return (!plan_.count_mode && plan_.open_loop) || scheduler_.queue_empty();
}

void Worker::assign(Connection& c, const Request& r, int64_t now, bool write_now) {
    Request request = r;
    if (request.assigned_ns == 0) request.assigned_ns = now;
    if (c.state() == Connection::State::Closed) {
        std::string why;
        if (!c.open(why)) {
            c.session().submit(request);
            if (request.counted) ++counted_in_flight_;
            c.close();
            on_lost(c, kConnect, why, now);
            return;
        }
    }
    c.session().submit(request);
    if (request.counted) ++counted_in_flight_;
    if (write_now) c.flush();  // a no-op until the connection is up; a failure is settled through on_lost
}

int Worker::active_at(int64_t now) const noexcept {
    const double t_s = static_cast<double>(now - plan_.window_start_ns) * 1e-9;
    const auto total = static_cast<int64_t>(std::floor(plan_.connection_curve.value_at(t_s) + 1e-9));
    // split as the connections are (Engine): the first total % threads workers one more
    return static_cast<int>(total / plan_.options.threads + (index_ < total % plan_.options.threads ? 1 : 0));
}

void Worker::update_active(int64_t now) {
    const int was = active_;
    active_ = active_at(now);
    for (int i = std::max(was, 0); i < active_ && i < static_cast<int>(connections_.size()); ++i) {
        Connection& c = *connections_[static_cast<size_t>(i)];
        if (!c.parked) continue;  // still busy with the request it had when the count fell
        c.parked = false;
        next_closed(c, now);  // opens it the first time; after that, the same connection again
    }
}

void Worker::next_closed(Connection& c, int64_t now) {
    if (c.slot >= active_) {
        // A connections schedule's count is below this one's place: it waits, open and idle,
        // until the count grows again (update_active). Its requests in flight finish first.
        c.parked = true;
        return;
    }
    Request r;
    // Closed loop: requests to send again first (refused by an HTTP/2 server, never answered on a
    // lost or closed connection).
    RequestQueue& retries = scheduler_.queue();
    // HTTP/2 and an HTTP/1.1 pipeline: the slots filled now go out in one write, not one each.
    const bool one_write = c.session().gathers_writes();
    while (c.session().free_slots() > 0) {
        if (!retries.empty()) {
            r = retries.front();
            retries.pop_front();
        } else if (!scheduler_.next_closed(now, r)) {
            break;
        }
        assign(c, r, now, !one_write);
        if (c.state() == Connection::State::Closed) return;  // lost at once: settled and rescheduled
    }
    if (one_write) c.flush();  // a failure is settled through on_lost
}

void Worker::on_tcp_connected(Connection& c, int64_t now) noexcept {
    if (preconnecting_) return;  // before the window
    // Closed loop: the connection belongs to the window when its request does; open loop
    // (connections opened ahead of requests): when it opened inside the window.
    const bool counted = plan_.open_loop ? plan_.in_window(now) : c.session().carries_counted();
    recorder_.connection_opened(counted);
    if (const int64_t took = c.connect_took_ns(); took >= 0) recorder_.connection_phase(kPhase_connect, counted, took);
}

void Worker::on_ready(Connection& c, int64_t now) {
    if (preconnecting_) return;  // open before the window: the run hands it requests
    // TLS over TCP, or QUIC's own TLS 1.3 handshake: the connection says how it went.
    if (c.handshakes()) {
        const bool counted = plan_.open_loop ? plan_.in_window(now) : c.counted_at_handshake();
        recorder_.tls_handshake(counted, c.handshake_resumed());
        recorder_.connection_phase(c.handshake_phase(), counted, now - c.handshake_started_ns());
        recorder_.early_data(counted, c.early_data());
    }
    if (!plan_.open_loop) {
        c.flush();
        return;
    }
    if (c.pool_connecting) {
        c.pool_connecting = false;
        --connecting_;
    }
    mark_ready(c);
    if (!scheduler_.queue().empty()) dispatch(now);
}

void Worker::on_response(Connection&, Request& r, int status, int64_t now) noexcept {
    if (r.counted) --counted_in_flight_;
    recorder_.response(r, status, now);
}

void Worker::on_answered(Connection& c, int64_t now) {
    if (preconnecting_) {  // HTTP/2 SETTINGS before any request; a closing server: reopened later
        if (!c.session().reusable()) c.close();
        return;
    }
    if (!plan_.options.keepalive || !c.session().reusable()) {
        // The server closed (or asked to close) the connection: reopen it. Pipelined requests
        // behind the response that ended it were never answered (the server said so): they go
        // out again first, on the fresh connection, neither lost nor counted twice.
        if (plan_.options.keepalive) recorder_.reconnect(c.last_counted);
        const bool requeued = c.session().in_flight() > 0;
        if (requeued) requeue_unanswered(c);
        c.close();
        if (plan_.open_loop) {
            open_pool_connection(c, now);
            if (requeued) dispatch(now);
        } else {
            next_closed(c, now);
        }
        return;
    }
    if (!plan_.open_loop) {
        next_closed(c, now);
        return;
    }
    mark_ready(c);
    if (!scheduler_.queue().empty()) dispatch(now);
}

void Worker::on_refused(Connection&, Request& r, int64_t now) noexcept {
    // HTTP/2: refused unprocessed (above a GOAWAY's last stream, or REFUSED_STREAM): it goes
    // out again, first in line, on the next free slot of any connection (not from inside the
    // session's input: the owner refills slots in on_answered, open loop also in release_due).
    // Its assigned time is kept, so a server that refuses forever still ends in a timeout.
    if (r.counted) --counted_in_flight_;
    recorder_.retried(r.counted && (plan_.count_mode || now < plan_.window_end_ns));
    try {
        scheduler_.queue().push_front(r);
    } catch (...) {
        recorder_.error(r, kRead, "out of memory re-queueing a refused request", now);
    }
}

void Worker::on_stream_error(Connection&, Request& r, const std::string& why, int64_t now) noexcept {
    if (r.counted) --counted_in_flight_;
    try {
        recorder_.error(r, kRead, why, now);
    } catch (...) {
    }
}

void Worker::on_idle_closed(Connection& c, int64_t now) {
    if (preconnecting_) return;  // stays closed: opened again in the run
    // No request outstanding: the server closing an idle connection is not an error.
    if (plan_.open_loop) open_pool_connection(c, now);
}

void Worker::on_lost(Connection& c, ErrorKind kind, const std::string& why, int64_t now) {
    if (preconnecting_) return;  // refused before the window: opened again, and counted, in the run
    if (c.pool_connecting) {
        c.pool_connecting = false;
        --connecting_;
    }
    Request taken[kTakeBatch];
    bool answered[kTakeBatch];
    bool any = false;
    bool resent_counted = false;
    resend_.clear();
    while (c.session().in_flight() > 0) {
        const size_t n = c.session().take_in_flight(taken, answered, kTakeBatch);
        for (size_t i = 0; i < n; ++i) {
            any = true;
            Request& r = taken[i];
            if (r.counted) --counted_in_flight_;
            // A keep-alive connection the server closed as we used it: the request never reached
            // its handler, so it goes out again on a fresh connection (what every HTTP client
            // does) - once in the closed loop; in the open loop its due time is unchanged. Back
            // to the front of the queue, in order (a pipeline or HTTP/2 loses several at once).
            const bool unanswered_on_reuse = (kind == kRead || kind == kWrite) && c.reused() && !answered[i];
            if (unanswered_on_reuse && (plan_.open_loop || !r.retried)) {
                if (plan_.open_loop) {
                    resent_counted |= r.counted && now < plan_.window_end_ns;
                    r.assigned_ns = 0;
                } else {
                    resent_counted |= r.counted;
                    r.retried = true;
                }
                resend_.push_back(r);
                continue;
            }
            if (kind == kRead && !answered[i] && !c.reused()) {
                recorder_.error(r, kind, why + " (before any response byte)", now);
            } else {
                recorder_.error(r, kind, why, now);
            }
        }
    }
    // One reconnect for the connection reopened, however many requests it carried.
    const bool resent = !resend_.empty();
    if (resent) {
        recorder_.reconnect(resent_counted);
        requeue_front(now);
    }
    if (plan_.open_loop) {
        if (!any && kind == kConnect) {
            // A pool connection that could not be set up: the oldest waiting request fails with
            // it (so a dead target still ends a counted run); the slot retries after a delay.
            if (!scheduler_.queue().empty()) {
                fail_queued_request(why, now);
            } else {
                recorder_.note_error(why, now);
            }
            c.retry_at_ns = now + std::max<int64_t>(plan_.connect_retry_delay_ns, 1);
            return;
        }
        open_pool_connection(c, now);
        if (resent) dispatch(now);
        return;
    }
    if (resent) {
        next_closed(c, now);  // the queue's front first: the requests to send again
    } else if (kind == kConnect) {
        c.retry_at_ns = now + std::max<int64_t>(plan_.connect_retry_delay_ns, 1);  // by housekeeping
    } else {
        next_closed(c, now);
    }
}

void Worker::requeue_unanswered(Connection& c) {
    Request taken[kTakeBatch];
    bool answered[kTakeBatch];
    resend_.clear();
    while (c.session().in_flight() > 0) {
        const size_t n = c.session().take_in_flight(taken, answered, kTakeBatch);
        for (size_t i = 0; i < n; ++i) {
            if (taken[i].counted) --counted_in_flight_;
            if (plan_.open_loop) taken[i].assigned_ns = 0;  // as a request lost on a reused connection
            resend_.push_back(taken[i]);
        }
    }
    requeue_front(monotonic_ns());
}

void Worker::requeue_front(int64_t now) {
    RequestQueue& queue = scheduler_.queue();
    for (size_t i = resend_.size(); i-- > 0;) {  // the oldest ends up first
        try {
            queue.push_front(resend_[i]);
        } catch (...) {
            recorder_.error(resend_[i], kRead, "out of memory re-queueing a request", now);
        }
    }
    resend_.clear();
}

void Worker::housekeeping(int64_t now) {
    for (size_t i = 0; i < connections_.size(); ++i) {
        Connection& c = *connections_[i];
        if (c.session().in_flight() > 0) {
            if (now - c.session().oldest_assigned_ns() >= plan_.timeout_ns) {
                if (c.state() == Connection::State::Open && c.session().reads_when_idle()) {
                    expire_streams(c, now);  // HTTP/2: per stream, the connection goes on
                    continue;
                }
                c.close();
                on_lost(c, kTimeout,
                        "timeout: no complete response within " + std::to_string(plan_.timeout_ns / 1'000'000) + " ms",
                        now);
            }
        } else if (c.retry_at_ns && now >= c.retry_at_ns) {
            c.retry_at_ns = 0;
            if (plan_.open_loop) {
                open_pool_connection(c, now);
            } else {
                next_closed(c, now);
            }
        }
    }
}

void Worker::expire_streams(Connection& c, int64_t now) {
    Request taken[kTakeBatch];
    size_t n;
    while ((n = c.session().take_expired(now - plan_.timeout_ns, taken, kTakeBatch)) > 0) {
        for (size_t i = 0; i < n; ++i) {
            if (taken[i].counted) --counted_in_flight_;
            recorder_.error(taken[i], kTimeout,
                            "timeout: no complete response within " + std::to_string(plan_.timeout_ns / 1'000'000) +
                                (plan_.h3 ? " ms (HTTP/3 stream cancelled)" : " ms (HTTP/2 stream cancelled)"),
                            now);
        }
    }
    if (!c.flush()) return;                                         // lost: settled through on_lost
    if (c.state() == Connection::State::Open) on_answered(c, now);  // refill the freed slots
}

void Worker::settle_unfinished(int64_t now) {
    Request taken[kTakeBatch];
    bool answered[kTakeBatch];
    for (auto& owned : connections_) {
        Session& s = owned->session();
        while (s.in_flight() > 0) {
            const size_t n = s.take_in_flight(taken, answered, kTakeBatch);
            for (size_t i = 0; i < n; ++i) {
                if (taken[i].counted) --counted_in_flight_;
                recorder_.unfinished(taken[i], now);
            }
        }
    }
    RequestQueue& queue = scheduler_.queue();
    for (; !queue.empty(); queue.pop_front()) recorder_.unfinished(queue.front(), now);
}

}  // namespace loadbench::generator
