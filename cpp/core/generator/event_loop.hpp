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
    // precise: a nanosecond timeout (epoll_pwait2) for sends due at sub-millisecond times;
    // otherwise milliseconds, rounded up.
    void run_once(int64_t now_ns, int64_t deadline_ns, bool precise) noexcept;

private:
    static constexpr int kMaxEvents = 256;
    int fd_ = -1;
    std::string error_;
    epoll_event events_[kMaxEvents];
};

}  // namespace loadbench::generator
