#include "core/generator/loop/scheduler.hpp"

namespace loadbench::generator {

void RequestQueue::grow() {
    std::vector<Request> bigger(ring_.empty() ? 64 : ring_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
}

Scheduler::Scheduler(const RunPlan& plan, int worker_index, int64_t budget)
    : plan_(plan), worker_index_(worker_index), budget_left_(budget) {}

void Scheduler::begin() {
    if (!plan_.open_loop) return;
    if (!plan_.rate_curve.empty()) {
        // A load shape: the workers' arrivals interleave along the one curve (ArrivalSchedule).
        schedule_.emplace(plan_.arrival, plan_.rate_curve, plan_.window_start_ns, worker_index_, plan_.options.threads,
                          plan_.options.seed + static_cast<uint64_t>(worker_index_));
        varying_ = true;
        return;
    }
    // Worker i starts i/T of a gap late, so the workers' constant schedules interleave.
    schedule_.emplace(plan_.arrival, plan_.rate_per_worker, plan_.start_ns,
                      static_cast<double>(worker_index_) / plan_.options.threads,
                      plan_.options.seed + static_cast<uint64_t>(worker_index_));
    const double mean_gap_ns = 1e9 / plan_.rate_per_worker;
    batch_ns_ = mean_gap_ns < static_cast<double>(plan_.send_batch_ns) ? plan_.send_batch_ns : 0;
}

Request Scheduler::make(int64_t intended, bool counted) noexcept {
    Request r;
    r.intended_ns = intended;
    r.counted = counted;
    r.template_index = next_template_;
    if (++next_template_ == plan_.wire_requests.size()) next_template_ = 0;
    return r;
}

bool Scheduler::next_closed(int64_t now, Request& out) noexcept {
    if (plan_.stop.load(std::memory_order_relaxed) || now >= plan_.window_end_ns) return false;
    const bool counted = now >= plan_.window_start_ns;
    if (plan_.count_mode && counted) {
        if (budget_left_ == 0) return false;
        --budget_left_;
    }
    out = make(now, counted);
    return true;
}

bool Scheduler::next_due(int64_t now, Request& out) noexcept {
    if (!schedule_ || schedule_done_ || schedule_->next() > now) return false;
    const int64_t intended = schedule_->next();
    if (intended >= plan_.window_end_ns) {
        schedule_done_ = true;
        return false;
    }
    const bool counted = intended >= plan_.window_start_ns;
    if (plan_.count_mode && counted) {
        if (budget_left_ == 0) {
            schedule_done_ = true;
            return false;
        }
        --budget_left_;
    }
    schedule_->advance();
    out = make(intended, counted);
    return true;
}

int64_t Scheduler::next_due_ns() const noexcept {
    if (!schedule_ || schedule_done_) return INT64_MAX;
    return schedule_->next() < plan_.window_end_ns ? schedule_->next() : INT64_MAX;
}

int64_t Scheduler::next_wake_ns() const noexcept {
    const int64_t due = next_due_ns();
    if (due == INT64_MAX) return INT64_MAX;
    // A varying rate batches while the gap around the next arrival is below the batch (a ramp
    // starts batching once it passes 1 / send_batch per worker, and stops below it again).
    if (varying_)
        return due + (schedule_->gap_ns() < static_cast<double>(plan_.send_batch_ns) ? plan_.send_batch_ns : 0);
    return due + batch_ns_;
}

bool Scheduler::exhausted(int64_t now) const noexcept {
    if (now >= plan_.window_end_ns || plan_.stop.load(std::memory_order_relaxed)) return true;
    if (!plan_.count_mode || now < plan_.window_start_ns) return false;
    return budget_left_ == 0 || schedule_done_;
}

}  // namespace loadbench::generator
