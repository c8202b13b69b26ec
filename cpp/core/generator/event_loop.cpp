#include "core/generator/event_loop.hpp"

#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/generator/plan.hpp"

namespace loadbench::generator {

int64_t monotonic_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

EventLoop::EventLoop() {
    fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (fd_ < 0) {
        error_ = std::string("epoll_create1: ") + std::strerror(errno);
        return;
    }
    timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;  // each expiry wakes the wait once; nothing is read
    ev.data.ptr = nullptr;          // the timer, not a handler
    if (timer_fd_ < 0 || epoll_ctl(fd_, EPOLL_CTL_ADD, timer_fd_, &ev) != 0)
        error_ = std::string("timerfd: ") + std::strerror(errno);
}

EventLoop::~EventLoop() {
    if (timer_fd_ >= 0) ::close(timer_fd_);
    if (fd_ >= 0) ::close(fd_);
}

void EventLoop::arm(int64_t deadline_ns) noexcept {
    if (deadline_ns == armed_ns_) return;
    itimerspec when{};  // all zero: disarmed
    if (deadline_ns != INT64_MAX) {
        when.it_value.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000);
        when.it_value.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000);
    }
    timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &when, nullptr);
    armed_ns_ = deadline_ns;
}

bool EventLoop::watch(int fd, IoHandler& handler, std::string& why) noexcept {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = &handler;
    if (epoll_ctl(fd_, EPOLL_CTL_ADD, fd, &ev) == 0) return true;
    why = std::string("epoll_ctl: ") + std::strerror(errno);
    return false;
}

void EventLoop::run_once(int64_t now_ns, int64_t deadline_ns, bool precise) noexcept {
    const int64_t wait_ns = deadline_ns > now_ns ? deadline_ns - now_ns : 0;
    int n;
    if (precise) {
        if (wait_ns > 0) arm(deadline_ns);
        n = epoll_wait(fd_, events_, kMaxEvents, wait_ns > 0 ? -1 : 0);
    } else {
        const int64_t ms = (wait_ns + 999'999) / 1'000'000;
        n = epoll_wait(fd_, events_, kMaxEvents, static_cast<int>(ms > 1'000'000 ? 1'000'000 : ms));
    }
    for (int i = 0; i < n; ++i) {
        if (events_[i].data.ptr == nullptr) {
            armed_ns_ = 0;  // it fired: the next deadline arms it again
            continue;
        }
        static_cast<IoHandler*>(events_[i].data.ptr)->on_io(events_[i].events);
    }
}

}  // namespace loadbench::generator
