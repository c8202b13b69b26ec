#include "core/generator/loop/event_loop.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

#include "core/generator/base/plan.hpp"

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
    const int64_t timer_ns = next_timer();
    if (timer_ns < deadline_ns) {
        deadline_ns = timer_ns;
        precise = true;  // QUIC's ACK delay and pacing are sub-millisecond
    }
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
    if (!heap_.empty()) run_due_timers();
}

int EventLoop::poll(BetweenEvents& between) noexcept {
    const int n = epoll_wait(fd_, events_, kMaxEvents, 0);
    for (int i = 0; i < n; ++i) {
        if (i > 0) between.between_events();
        static_cast<IoHandler*>(events_[i].data.ptr)->on_io(events_[i].events);
    }
    const int timers = heap_.empty() ? 0 : run_due_timers();
    return (n > 0 ? n : 0) + timers;
}

int EventLoop::add_timer(TimerHandler& handler) {
    int timer;
    if (!free_timers_.empty()) {
        timer = free_timers_.back();
        free_timers_.pop_back();
    } else {
        timer = static_cast<int>(timers_.size());
        timers_.emplace_back();
    }
    timers_[static_cast<size_t>(timer)] = Timer{&handler, INT64_MAX};
    return timer;
}

void EventLoop::remove_timer(int timer) noexcept {
    timers_[static_cast<size_t>(timer)] = Timer{};  // its heap entries are stale from now on
    free_timers_.push_back(timer);
}

void EventLoop::arm(int timer, int64_t at_ns) {
    Timer& t = timers_[static_cast<size_t>(timer)];
    if (t.at == at_ns) return;
    t.at = at_ns;
    if (at_ns == INT64_MAX) return;
    heap_.push_back(Entry{at_ns, timer});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
}

int64_t EventLoop::next_timer() noexcept {
    while (!heap_.empty() && !current(heap_.front())) {
        std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
        heap_.pop_back();
    }
    return heap_.empty() ? INT64_MAX : heap_.front().at;
}

int EventLoop::run_due_timers() noexcept {
    const int64_t now = monotonic_ns();
    // Those due now, taken out first: a handler that re-arms at or before `now` runs on the next
    // round, after the I/O that may settle it, never in a loop here.
    due_.clear();
    while (next_timer() <= now) {
        const Entry e = heap_.front();
        std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
        heap_.pop_back();
        Timer& t = timers_[static_cast<size_t>(e.timer)];
        t.at = INT64_MAX;  // fired; the handler re-arms it if it wants more
        due_.push_back(Fired{e.timer, t.handler});
    }
    int ran = 0;
    for (const Fired& f : due_) {
        const Timer& t = timers_[static_cast<size_t>(f.timer)];
        // Removed by an earlier handler of this round (the slot may even be someone else's now),
        // or armed again meanwhile (it runs when that is due): skip.
        if (t.handler != f.handler || t.at != INT64_MAX) continue;
        f.handler->on_timer(now);
        ++ran;
    }
    return ran;
}

}  // namespace loadbench::generator
