#pragma once
// One event loop per worker thread: epoll, edge-triggered descriptor registration, and a wait
// bounded by the next deadline the owner asks for (its timers). It knows no HTTP.
#include <sys/epoll.h>

#include <cstdint>
#include <string>

namespace loadbench::generator {

class IoHandler {
public:
    // `events`: the epoll bits (EPOLLIN, EPOLLOUT, EPOLLRDHUP, EPOLLHUP, EPOLLERR).
    virtual void on_io(uint32_t events) = 0;

protected:
    ~IoHandler() = default;
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
    // precise: the deadline to the nanosecond (the open loop's sends) through a timerfd that
    // stays armed across wake-ups for I/O: it is set again only when the deadline moves, where
    // a timeout per wait (epoll_pwait2) armed and cancelled a kernel timer on every wake-up -
    // on a VM each a trip to the hypervisor, twice per response. Otherwise milliseconds,
    // rounded up (the closed loop's timers: timeouts, retries, the window's edges).
    void run_once(int64_t now_ns, int64_t deadline_ns, bool precise) noexcept;

private:
    static constexpr int kMaxEvents = 256;
    // Arms the timerfd for `deadline_ns` unless it already is (INT64_MAX: disarmed).
    void arm(int64_t deadline_ns) noexcept;

    int fd_ = -1;
    int timer_fd_ = -1;
    int64_t armed_ns_ = 0;  // what the timerfd is set to (0: not armed, or it fired)
    std::string error_;
    epoll_event events_[kMaxEvents];
};

}  // namespace loadbench::generator
