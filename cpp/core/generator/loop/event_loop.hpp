#pragma once
// One event loop per worker thread: epoll, edge-triggered descriptor registration, timers, and a
// wait bounded by the next deadline the owner asks for or the earliest timer. It knows no HTTP.
//
// Timers have no descriptor: a min-heap in the loop bounds the wait (epoll_pwait2, nanoseconds)
// and the due ones run after the I/O handlers. A timerfd costs a timerfd_settime syscall per
// re-arm (~20 us on a VM); QUIC moves its expiry with nearly every packet, and those syscalls
// were half of the generator's HTTP/3 CPU (perf, against caddy, after re-arming only earlier).
#include <sys/epoll.h>

#include <cstdint>
#include <string>
#include <vector>

namespace loadbench::generator {

class IoHandler {
public:
    // `events`: the epoll bits (EPOLLIN, EPOLLOUT, EPOLLRDHUP, EPOLLHUP, EPOLLERR).
    virtual void on_io(uint32_t events) = 0;

protected:
    ~IoHandler() = default;
};

// Busy-poll: asked between two ready descriptors' handlers, so work that falls due while a
// burst of them is handled (a send) need not wait for the whole burst.
class BetweenEvents {
public:
    virtual void between_events() = 0;

protected:
    ~BetweenEvents() = default;
};

class TimerHandler {
public:
    virtual void on_timer(int64_t now) = 0;

protected:
    ~TimerHandler() = default;
};

class EventLoop {
public:
    EventLoop();
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // Empty when the loop could be created.
    const std::string& error() const noexcept { return error_; }
    // Watches `fd` for input, output and the peer's close, edge-triggered, for the socket's whole
    // lifetime (closing the descriptor removes it): no epoll_ctl per request. False: `why` says.
    bool watch(int fd, IoHandler& handler, std::string& why) noexcept;
    // Waits until a descriptor is ready or `deadline_ns` (monotonic) and runs the handlers.
    // precise: a nanosecond timeout (epoll_pwait2) for sends due at sub-millisecond times;
    // otherwise milliseconds, rounded up.
    // Timers run after them, when due (the wait is then nanosecond-precise, whatever `precise`).
    void run_once(int64_t now_ns, int64_t deadline_ns, bool precise) noexcept;
    // Busy-poll: runs the handlers of the descriptors ready now and the timers due, without
    // waiting (epoll_wait with a zero timeout returns at once), `between` after each handler
    // but the last. How many ran (0: an idle pass).
    int poll(BetweenEvents& between) noexcept;

    // A timer for `handler`, disarmed, for as long as its owner lives: remove_timer() before the
    // handler goes away. Its number is stable.
    int add_timer(TimerHandler& handler);
    void remove_timer(int timer) noexcept;
    // Runs the handler once at `at_ns` (monotonic) or after; replaces an earlier arming.
    // INT64_MAX disarms. An arming that moves a timer later leaves a stale heap entry that is
    // skipped when it surfaces, so armings are cheap; owners whose deadline moves constantly
    // re-arm only when it moves earlier and re-check when it fires (fewer entries).
    void arm(int timer, int64_t at_ns);
    int64_t armed_at(int timer) const noexcept { return timers_[static_cast<size_t>(timer)].at; }
    // The earliest armed timer (INT64_MAX: none).
    int64_t next_timer() noexcept;

private:
    struct Timer {
        TimerHandler* handler = nullptr;  // null: a free slot
        int64_t at = INT64_MAX;           // INT64_MAX: disarmed
    };
    struct Entry {
        int64_t at;
        int timer;
        bool operator>(const Entry& o) const noexcept { return at > o.at; }
    };
    bool current(const Entry& e) const noexcept { return timers_[static_cast<size_t>(e.timer)].at == e.at; }
    int run_due_timers() noexcept;  // how many handlers ran

    static constexpr int kMaxEvents = 256;
    int fd_ = -1;
    std::string error_;
    epoll_event events_[kMaxEvents];
    std::vector<Timer> timers_;
    std::vector<int> free_timers_;
    struct Fired {
        int timer;
        TimerHandler* handler;
    };
    std::vector<Fired> due_;
    std::vector<Entry> heap_;  // a min-heap on `at` (std::greater); entries whose `at` no longer
                               // matches their timer's are stale
};

}  // namespace loadbench::generator
