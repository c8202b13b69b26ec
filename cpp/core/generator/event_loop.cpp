#include "core/generator/event_loop.hpp"

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
    if (fd_ < 0) error_ = std::string("epoll_create1: ") + std::strerror(errno);
}

EventLoop::~EventLoop() {
    if (fd_ >= 0) ::close(fd_);
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
        const timespec timeout{static_cast<time_t>(wait_ns / 1'000'000'000),
                               static_cast<long>(wait_ns % 1'000'000'000)};
        n = epoll_pwait2(fd_, events_, kMaxEvents, &timeout, nullptr);
    } else {
        const int64_t ms = (wait_ns + 999'999) / 1'000'000;
        n = epoll_wait(fd_, events_, kMaxEvents, static_cast<int>(ms > 1'000'000 ? 1'000'000 : ms));
    }
    for (int i = 0; i < n; ++i) static_cast<IoHandler*>(events_[i].data.ptr)->on_io(events_[i].events);
}

}  // namespace loadbench::generator
