#include "core/generator/worker.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/http/response_parser.hpp"

namespace loadbench::generator {

int64_t monotonic_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {

double thread_cpu_s() noexcept {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr int64_t kHousekeepingNs = 10'000'000;  // timeouts and retries are checked every 10 ms
constexpr int kMaxEvents = 256;

}  // namespace

// A state machine per socket: connect, (TLS handshake), write request, read and parse the
// response, record, next.
struct Worker::Connection {
    enum class State : uint8_t { Closed, Connecting, Handshaking, Writing, Reading, Idle };

    int fd = -1;
    State state = State::Closed;
    std::unique_ptr<Transport> transport;
    http::ResponseParser parser;
    std::string carry;             // an incomplete header block / chunk line from the last read
    size_t request = 0;
    size_t write_offset = 0;
    int64_t attempt_start_ns = 0;  // closed loop: when the request was due; open loop: its intended time
    int64_t sent_ns = 0;           // when it was actually handed to the socket (timeouts run from here)
    int64_t retry_at_ns = 0;       // > 0: waiting to reconnect after a failed connect
    bool attempt_active = false;
    bool counted = false;          // the attempt started inside the window
    bool reused = false;           // this TCP connection already carried a response
    bool retried = false;          // this attempt already moved to a fresh connection once
    bool peer_closed = false;      // the last event reported the peer's FIN
    bool in_idle_list = false;     // open loop: listed in Worker::idle_
    bool pool_connecting = false;  // open loop: counted in Worker::connecting_
};

Worker::Worker(const RunPlan& plan, int index, int connections, int max_connections, int64_t budget, int cpu)
    : plan_(plan), index_(index), cpu_(cpu), max_connections_(max_connections), budget_left_(budget) {
    connections_.reserve(static_cast<size_t>(max_connections));
    for (int i = 0; i < connections; ++i) {
        auto c = std::make_unique<Connection>();
        c->transport = plan.tls ? make_tls_transport(*plan.tls, plan.url.host, plan.url.host_is_ip_literal)
                                : make_plain_transport();
        connections_.push_back(std::move(c));
    }
    read_buffer_ = std::make_unique<char[]>(read_capacity_);
}

Worker::~Worker() {
    for (auto& c : connections_) close_connection(*c);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
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
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0 && setup_error_.empty()) setup_error_ = std::string("epoll_create1: ") + std::strerror(errno);
    ready_count.fetch_add(1);
    ready_count.notify_all();
    plan_.started.wait(false);
    if (!setup_error_.empty()) return;

    epoll_event events[kMaxEvents];
    const bool count_mode = plan_.count_mode;
    bool in_window = false;
    double cpu_at_window_start = 0.0;
    int64_t now = monotonic_ns();
    const bool open_loop = plan_.open_loop;
    if (open_loop) {
        // Sends are due at exact times: the default 50 us timer slack would make every one late.
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        // Worker i starts i/T of a gap late, so the workers' constant schedules interleave.
        schedule_.emplace(plan_.arrival, plan_.rate_per_worker, plan_.start_ns,
                          static_cast<double>(index_) / plan_.threads, plan_.seed + static_cast<uint64_t>(index_));
        for (auto& c : connections_) open_pool_connection(*c, now);
    } else {
        for (auto& c : connections_) begin_attempt(*c, now);
    }
    int64_t next_housekeeping = now + kHousekeepingNs;

    while (!plan_.stop.load(std::memory_order_relaxed)) {
        now = monotonic_ns();
        if (!in_window && now >= plan_.window_start_ns) {
            in_window = true;
            cpu_at_window_start = thread_cpu_s();
        }
        if (now >= plan_.window_end_ns) break;
        if (count_mode && in_window && budget_left_ == 0 && outstanding_counted_ == 0) break;
        if (now >= next_housekeeping) {
            housekeeping(now);
            next_housekeeping = now + kHousekeepingNs;
        }
        if (open_loop) release_due(now);
        int64_t wake = next_housekeeping;
        if (!in_window && plan_.window_start_ns < wake) wake = plan_.window_start_ns;
        if (plan_.window_end_ns < wake) wake = plan_.window_end_ns;
        int n;
        if (open_loop) {
            // Sends are due at sub-millisecond times: wait with nanosecond precision.
            if (!schedule_done_ && schedule_->next() < wake) wake = schedule_->next();
            const int64_t wait_ns = wake > now ? wake - now : 0;
            const timespec timeout{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
            n = epoll_pwait2(epoll_fd_, events, kMaxEvents, &timeout, nullptr);
        } else {
            const int timeout_ms = wake > now ? static_cast<int>((wake - now + 999'999) / 1'000'000) : 0;
            n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
        }
        for (int i = 0; i < n; ++i) event(*static_cast<Connection*>(events[i].data.ptr), events[i].events);
    }
    if (in_window) cpu_s_ = thread_cpu_s() - cpu_at_window_start;
    timeline_.flush();
    for (auto& c : connections_) close_connection(*c);
}

void Worker::event(Connection& c, uint32_t events) {
    switch (c.state) {
        case Connection::State::Connecting:
            on_connected(c, events);
            break;
        case Connection::State::Handshaking:
            do_handshake(c);
            break;
        case Connection::State::Writing:
            c.peer_closed = events & (EPOLLRDHUP | EPOLLHUP);
            continue_write(c);
            if (c.state == Connection::State::Reading && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                on_readable(c);
            break;
        case Connection::State::Reading:
            c.peer_closed = events & (EPOLLRDHUP | EPOLLHUP);
            if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) on_readable(c);
            break;
        case Connection::State::Idle:
            // No request outstanding: the server closing an idle connection is not an error.
            if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                close_connection(c);
                if (plan_.open_loop) open_pool_connection(c, monotonic_ns());
            }
            break;
        case Connection::State::Closed:
            break;
    }
}

void Worker::begin_attempt(Connection& c, int64_t now) {
    c.retry_at_ns = 0;
    const bool counted = now >= plan_.window_start_ns;
    if (plan_.stop.load(std::memory_order_relaxed) || now >= plan_.window_end_ns) {
        c.attempt_active = false;
        return;
    }
    if (plan_.count_mode && counted) {
        if (budget_left_ == 0) {
            c.attempt_active = false;
            if (c.fd >= 0) c.state = Connection::State::Idle;
            return;
        }
        --budget_left_;
        ++outstanding_counted_;
    }
    c.attempt_active = true;
    c.counted = counted;
    c.attempt_start_ns = now;
    c.sent_ns = now;
    c.retried = false;
    c.request = next_request_;
    if (++next_request_ == plan_.wire_requests.size()) next_request_ = 0;
    c.parser.start(plan_.head_requests[c.request]);
    if (c.fd >= 0) {
        send_request(c);
    } else {
        open_connection(c, now);
    }
}

void Worker::open_connection(Connection& c, int64_t now) {
    (void)now;
    const int fd = ::socket(plan_.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail(c, kConnect, std::string("socket: ") + std::strerror(errno));
        return;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&plan_.address), plan_.address_len) != 0 &&
        errno != EINPROGRESS) {
        const int err = errno;
        ::close(fd);
        fail(c, kConnect, std::string("connect: ") + std::strerror(err));
        return;
    }
    // Registered once for the socket's lifetime, edge-triggered: no epoll_ctl per request.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = &c;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        const int err = errno;
        ::close(fd);
        fail(c, kConnect, std::string("epoll_ctl: ") + std::strerror(err));
        return;
    }
    c.fd = fd;
    c.reused = false;
    c.state = Connection::State::Connecting;
}

void Worker::on_connected(Connection& c, uint32_t events) {
    if (events & (EPOLLERR | EPOLLHUP)) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        fail(c, kConnect, std::string("connect: ") + std::strerror(err ? err : ECONNREFUSED));
        return;
    }
    if (!(events & EPOLLOUT)) return;
    c.transport->attach(c.fd);
    if (plan_.open_loop) {
        const int64_t now = monotonic_ns();
        if (now >= plan_.window_start_ns && now < plan_.window_end_ns) ++measured_.connections_opened;
    } else if (c.counted) {
        ++measured_.connections_opened;
    }
    if (c.transport->needs_handshake()) {
        c.state = Connection::State::Handshaking;
        do_handshake(c);
    } else if (plan_.open_loop) {
        become_idle(c);
    } else {
        send_request(c);
    }
}

void Worker::do_handshake(Connection& c) {
    switch (c.transport->handshake()) {
        case IoStatus::Ok:
            if (plan_.open_loop) {
                const int64_t now = monotonic_ns();
                if (now >= plan_.window_start_ns && now < plan_.window_end_ns) ++measured_.tls_handshakes;
                become_idle(c);
                return;
            }
            if (c.counted) ++measured_.tls_handshakes;
            send_request(c);
            return;
        case IoStatus::WantRead:
        case IoStatus::WantWrite:
            return;  // the edge-triggered registration reports the next step
        case IoStatus::Eof:
            fail(c, kConnect, "TLS handshake: the server closed the connection");
            return;
        case IoStatus::Error:
            fail(c, kConnect, "TLS handshake: " + c.transport->last_error());
            return;
    }
}

void Worker::send_request(Connection& c) {
    c.state = Connection::State::Writing;
    c.write_offset = 0;
    continue_write(c);
}

void Worker::continue_write(Connection& c) {
    const std::string& wire = plan_.wire_requests[c.request];
    while (c.write_offset < wire.size()) {
        size_t n = 0;
        switch (c.transport->write(wire.data() + c.write_offset, wire.size() - c.write_offset, n)) {
            case IoStatus::Ok:
                c.write_offset += n;
                if (c.counted) measured_.bytes_written += n;
                break;
            case IoStatus::WantWrite:
            case IoStatus::WantRead:
                return;
            case IoStatus::Eof:
            case IoStatus::Error: {
                const int err = errno;
                const std::string tls_error = c.transport->last_error();
                on_closed_without_response(c, kWrite,
                                           "write: " + (tls_error.empty() ? std::string(std::strerror(err)) : tls_error));
                return;
            }
        }
    }
    c.state = Connection::State::Reading;
}

void Worker::on_readable(Connection& c) {
    char* const buffer = read_buffer_.get();
    const bool plain = !c.transport->needs_handshake();
    while (true) {
        size_t have = 0;
        if (!c.carry.empty()) {
            have = c.carry.size();
            std::memcpy(buffer, c.carry.data(), have);
            c.carry.clear();
        }
        const size_t room = read_capacity_ - have;
        size_t n = 0;
        const IoStatus status = c.transport->read(buffer + have, room, n);
        if (status == IoStatus::Ok) {
            if (c.counted) measured_.bytes_read += n;
            const size_t total = have + n;
            size_t consumed = 0;
            switch (c.parser.parse(buffer, total, consumed)) {
                case http::ResponseParser::Status::Complete:
                    if (consumed < total) {
                        // One request is in flight, so bytes beyond its response can only come
                        // from a server whose framing is wrong (e.g. a Content-Length shorter
                        // than the body). Counted here, they are a parse error whether or not
                        // they arrived in the same read as the response.
                        fail(c, kParse, "parse: " + std::to_string(total - consumed) +
                                            " bytes after a complete response (wrong Content-Length?)");
                        return;
                    }
                    complete_response(c, monotonic_ns());
                    return;
                case http::ResponseParser::Status::Error:
                    fail(c, kParse, std::string("parse: ") + c.parser.error());
                    return;
                case http::ResponseParser::Status::NeedMore:
                    if (consumed < total) c.carry.assign(buffer + consumed, total - consumed);
                    // A short read drained the socket; the next arrival raises a new edge.
                    if (plain && n < room && !c.peer_closed) return;
                    continue;
            }
        }
        if (have) c.carry.assign(buffer, have);  // nothing new: keep the partial bytes
        if (status == IoStatus::WantRead || status == IoStatus::WantWrite) return;
        if (status == IoStatus::Eof) {
            if (c.parser.finish_at_eof() == http::ResponseParser::Status::Complete) {
                complete_response(c, monotonic_ns());
                return;
            }
            on_closed_without_response(c, kRead, "read: the server closed the connection mid-response");
            return;
        }
        const int err = errno;
        const std::string tls_error = c.transport->last_error();
        on_closed_without_response(c, kRead, "read: " + (tls_error.empty() ? std::string(std::strerror(err)) : tls_error));
        return;
    }
}

void Worker::on_closed_without_response(Connection& c, ErrorKind kind, const std::string& why) {
    // A keep-alive connection the server closed while idle: the request never reached it, so
    // reopen once and resend (what every HTTP client does), counting the reconnect.
    if (plan_.open_loop && c.attempt_active && c.reused && !c.parser.started()) {
        // The server closed an idle keep-alive connection as we used it: the request goes back
        // to the front of the queue (its intended time unchanged) and the slot reconnects.
        const int64_t now = monotonic_ns();
        if (c.counted && now < plan_.window_end_ns) ++measured_.reconnects;
        c.attempt_active = false;
        backlog_.push_front(c.attempt_start_ns);
        close_connection(c);
        open_pool_connection(c, now);
        dispatch(now);
        return;
    }
    if (c.reused && !c.parser.started() && !c.retried) {
        close_connection(c);
        if (c.counted) ++measured_.reconnects;
        c.retried = true;
        c.parser.start(plan_.head_requests[c.request]);
        open_connection(c, monotonic_ns());
        return;
    }
    if (c.parser.started() || c.reused || kind == kWrite) {
        fail(c, kind, why);
    } else {
        fail(c, kind, why + " (before any response byte)");
    }
}

bool Worker::counted_outcome(Connection& c, int64_t now) noexcept {
    c.attempt_active = false;
    if (!c.counted) return false;
    if (plan_.count_mode) --outstanding_counted_;
    if (now >= plan_.window_end_ns) return false;
    last_outcome_ns_ = now;
    return true;
}

void Worker::complete_response(Connection& c, int64_t now) {
    if (counted_outcome(c, now)) {
        const int64_t latency_us = (now - c.attempt_start_ns + 500) / 1000;
        measured_.latency_us.record(latency_us);
        if (plan_.open_loop) measured_.latency_uncorrected_us.record((now - c.sent_ns + 500) / 1000);
        const int code = c.parser.status_code();
        ++measured_.status_codes[static_cast<size_t>(code < 1000 ? code : 999)];
        ++measured_.responses;
        timeline_.record_response(interval_of(now), latency_us);
        live_.responses.store(measured_.responses, std::memory_order_relaxed);
    }
    c.reused = true;
    const bool write_done = c.state == Connection::State::Reading;
    if (!plan_.keepalive || !c.parser.keep_alive() || !write_done) {
        if (plan_.keepalive && c.counted && now < plan_.window_end_ns) ++measured_.reconnects;
        close_connection(c);
        if (plan_.open_loop) {
            open_pool_connection(c, now);
            return;
        }
    } else if (plan_.open_loop) {
        become_idle(c);
        return;
    }
    begin_attempt(c, now);
}

void Worker::fail(Connection& c, ErrorKind kind, const std::string& why) {
    const int64_t now = monotonic_ns();
    if (plan_.open_loop && !c.attempt_active) {
        // A pool connection that could not be set up: the oldest waiting request fails with it
        // (so a dead target still ends a counted run); the slot retries after a short delay.
        if (c.pool_connecting) {
            c.pool_connecting = false;
            --connecting_;
        }
        close_connection(c);
        if (!backlog_.empty()) fail_queued_request(why, now);
        else if (measured_.first_error.empty() && now >= plan_.window_start_ns) measured_.first_error = why;
        c.retry_at_ns = now + std::max<int64_t>(plan_.connect_retry_delay_ns, 1);
        return;
    }
    if (c.attempt_active && counted_outcome(c, now)) {
        ++measured_.errors[kind];
        if (measured_.first_error.empty()) measured_.first_error = why;
        timeline_.record_error(interval_of(now));
        uint64_t total = 0;
        for (auto e : measured_.errors) total += e;
        live_.errors.store(total, std::memory_order_relaxed);
    }
    c.attempt_active = false;
    close_connection(c);
    if (plan_.open_loop) {
        open_pool_connection(c, now);
        return;
    }
    if (kind == kConnect) {
        c.retry_at_ns = now + plan_.connect_retry_delay_ns;  // retried by housekeeping
        if (c.retry_at_ns == 0) c.retry_at_ns = 1;
    } else {
        begin_attempt(c, now);
    }
}

void Worker::close_connection(Connection& c) noexcept {
    if (c.fd >= 0) {
        c.transport->detach();
        ::close(c.fd);  // also removes it from the epoll set
        c.fd = -1;
    }
    c.state = Connection::State::Closed;
    c.peer_closed = false;
    c.carry.clear();
    c.reused = false;
}

void Worker::housekeeping(int64_t now) {
    for (auto& owned : connections_) {
        Connection& c = *owned;
        if (c.attempt_active) {
            if (now - c.sent_ns >= plan_.timeout_ns)
                fail(c, kTimeout, "timeout: no complete response within " +
                                      std::to_string(plan_.timeout_ns / 1'000'000) + " ms");
        } else if (c.retry_at_ns && now >= c.retry_at_ns) {
            if (plan_.open_loop) {
                c.retry_at_ns = 0;
                open_pool_connection(c, now);
            } else {
                begin_attempt(c, now);
            }
        }
    }
}

}  // namespace loadbench::generator

namespace loadbench::generator {

void Worker::release_due(int64_t now) {
    while (!schedule_done_ && schedule_->next() <= now) {
        const int64_t intended = schedule_->next();
        if (intended >= plan_.window_end_ns) {
            schedule_done_ = true;
            break;
        }
        if (plan_.count_mode && intended >= plan_.window_start_ns) {
            if (budget_left_ == 0) {
                schedule_done_ = true;
                break;
            }
            --budget_left_;
            ++outstanding_counted_;
        }
        backlog_.push_back(intended);
        schedule_->advance();
    }
    dispatch(now);
}

void Worker::dispatch(int64_t now) {
    while (!backlog_.empty() && !idle_.empty()) {
        Connection* c = idle_.back();
        idle_.pop_back();
        c->in_idle_list = false;
        if (c->state != Connection::State::Idle || c->fd < 0) continue;  // stale entry
        const int64_t intended = backlog_.front();
        backlog_.pop_front();
        start_request(*c, intended, now);
    }
    // Every connection is busy and requests are waiting: grow the pool up to the cap.
    while (!backlog_.empty() && static_cast<int>(backlog_.size()) > connecting_ &&
           static_cast<int>(connections_.size()) < max_connections_) {
        auto c = std::make_unique<Connection>();
        c->transport = plan_.tls ? make_tls_transport(*plan_.tls, plan_.url.host, plan_.url.host_is_ip_literal)
                                 : make_plain_transport();
        Connection& added = *c;
        connections_.push_back(std::move(c));
        open_pool_connection(added, now);
    }
}

void Worker::start_request(Connection& c, int64_t intended, int64_t now) {
    c.attempt_active = true;
    c.counted = intended >= plan_.window_start_ns;
    c.attempt_start_ns = intended;
    c.sent_ns = now;
    c.retried = true;  // open loop: a dead keep-alive connection re-queues instead of retrying here
    c.request = next_request_;
    if (++next_request_ == plan_.wire_requests.size()) next_request_ = 0;
    c.parser.start(plan_.head_requests[c.request]);
    if (c.counted && now < plan_.window_end_ns) {
        const int64_t late_ns = now > intended ? now - intended : 0;
        measured_.lateness_us.record((late_ns + 500) / 1000);
        ++measured_.sends;
        if (late_ns > kLateSendNs) ++measured_.late_sends;
    }
    send_request(c);
}

void Worker::become_idle(Connection& c) {
    if (c.pool_connecting) {
        c.pool_connecting = false;
        --connecting_;
    }
    c.state = Connection::State::Idle;
    if (!c.in_idle_list) {
        c.in_idle_list = true;
        idle_.push_back(&c);
    }
    if (!backlog_.empty()) dispatch(monotonic_ns());
}

void Worker::open_pool_connection(Connection& c, int64_t now) {
    if (plan_.stop.load(std::memory_order_relaxed) || now >= plan_.window_end_ns) return;
    c.attempt_active = false;
    c.retry_at_ns = 0;
    if (!c.pool_connecting) {
        c.pool_connecting = true;
        ++connecting_;
    }
    open_connection(c, now);
}

void Worker::fail_queued_request(const std::string& why, int64_t now) {
    const int64_t intended = backlog_.front();
    backlog_.pop_front();
    if (intended < plan_.window_start_ns) return;
    if (plan_.count_mode) --outstanding_counted_;
    if (now >= plan_.window_end_ns) return;
    last_outcome_ns_ = now;
    ++measured_.errors[kConnect];
    if (measured_.first_error.empty()) measured_.first_error = why;
    timeline_.record_error(interval_of(now));
    uint64_t total = 0;
    for (auto e : measured_.errors) total += e;
    live_.errors.store(total, std::memory_order_relaxed);
}

}  // namespace loadbench::generator
