#pragma once
// When requests are due, and which request each one is; no protocol knowledge.
//  - closed loop: a slot frees -> the next request is due at once (also one connection per
//    request: the connection, not the schedule, differs);
//  - open loop: requests are due on a constant or Poisson schedule (at one rate, or along a
//    rate curve: --rate-schedule, --steps) whatever the server does, queued until a free slot
//    takes them (latency counts from the due time: coordinated-
//    omission correction, as wrk2).
// It enforces the window (nothing new is due once it ends; nothing due in the warm-up is
// counted) and, with a request count, the budget.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/generator/base/plan.hpp"
#include "core/generator/sessions/session.hpp"

namespace loadbench::generator {

// A ring of requests waiting for a slot: grows geometrically, never shrinks, so the steady
// state allocates nothing (std::deque allocates a block every few requests).
class RequestQueue {
public:
    bool empty() const noexcept { return size_ == 0; }
    size_t size() const noexcept { return size_; }
    Request& front() noexcept { return ring_[head_]; }
    // The i-th request from the back (0: the newest); i < size().
    const Request& from_back(size_t i) const noexcept { return ring_[(head_ + size_ - 1 - i) & (ring_.size() - 1)]; }
    void pop_front() noexcept {
        head_ = (head_ + 1) & (ring_.size() - 1);
        --size_;
    }
    void push_back(const Request& r) {
        if (size_ == ring_.size()) grow();
        ring_[(head_ + size_) & (ring_.size() - 1)] = r;
        ++size_;
    }
    void push_front(const Request& r) {
        if (size_ == ring_.size()) grow();
        head_ = (head_ + ring_.size() - 1) & (ring_.size() - 1);
        ring_[head_] = r;
        ++size_;
    }

private:
    void grow();
    std::vector<Request> ring_;  // size: 0 or a power of two
    size_t head_ = 0;
    size_t size_ = 0;
};

class Scheduler {
public:
    // budget: with a request count, how many counted requests this worker may start.
    Scheduler(const RunPlan& plan, int worker_index, int64_t budget);
    // Call once the plan's start time is set (the open-loop schedule starts there).
    void begin();

    // Closed loop: a slot is free at `now`. False: no more requests start (window over,
    // budget spent, stopping).
    bool next_closed(int64_t now, Request& out) noexcept;

    // Open loop: the next request due by `now`, or false. Requests due from the window's end
    // on are never released.
    bool next_due(int64_t now, Request& out) noexcept;
    // When the next open-loop request is due (INT64_MAX: none will be).
    int64_t next_due_ns() const noexcept;
    // When the worker should wake to send it (INT64_MAX: never): its due time, or up to the
    // plan's send batch (40 us by default: half a 100 us lateness budget) later when requests
    // are due closer together than that, so one wake-up sends the few due within it. A wake-up (a timer, a context
    // switch, on a VM exits to the hypervisor) costs the generator more CPU than the send itself: waking once per
    // request made the open loop 1.4x dearer per request than the closed loop near a server's capacity. The lateness
    // this adds is measured (`lateness_us`) and charged to the corrected latency.
    int64_t next_wake_ns() const noexcept;
    // Open-loop requests due and waiting for a slot (a request whose connection closed before
    // it was answered goes back to the front).
    RequestQueue& queue() noexcept { return queue_; }
    bool queue_empty() const noexcept { return queue_.empty(); }

    // No more requests will be started (the window ended, the budget is spent).
    bool exhausted(int64_t now) const noexcept;

private:
    Request make(int64_t intended, bool counted) noexcept;

    const RunPlan& plan_;
    int worker_index_;
    std::optional<ArrivalSchedule> schedule_;
    bool schedule_done_ = false;
    int64_t batch_ns_ = 0;  // open loop: how long a due send may wait for the ones after it
    bool varying_ = false;  // along a rate curve: the batch follows the gap of the moment
    int64_t budget_left_;
    uint32_t next_template_ = 0;
    RequestQueue queue_;
};

}  // namespace loadbench::generator
