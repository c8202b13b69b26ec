// The Worker's open-loop half: requests due on a schedule are queued, handed to any connection
// with a free slot, and the pool grows (up to max_connections) while requests wait.
#include <algorithm>

#include "core/generator/loop/worker.hpp"

namespace loadbench::generator {

size_t Worker::release_due(int64_t now) {
    Request r;
    size_t released = 0;
    while (scheduler_.next_due(now, r)) {
        if (released == 0) loop_late_ns_ = now - r.intended_ns;
        r.released_ns = now;
        recorder_.due(r, now);
        scheduler_.queue().push_back(r);
        ++released;
    }
    RequestQueue& queue = scheduler_.queue();
    if (queue.empty()) return released;
    dispatch(now);
    // The queue is first in, first out: what is left of the requests released just now is at
    // its back, and found every connection busy (or none open yet) - the pool, not the loop,
    // makes them late.
    for (size_t i = 0, waiting = std::min(released, queue.size()); i < waiting; ++i)
        recorder_.slot_wait(queue.from_back(i));
    return released;
}

void Worker::between_events() noexcept {
    if (scheduler_.next_due_ns() == INT64_MAX) return;
    const int64_t now = monotonic_ns();
    if (scheduler_.next_due_ns() > now) return;
    try {
        release_due(now);
    } catch (...) {
        // out of memory growing the queue: the request stays due and goes out on the next pass
    }
}

void Worker::dispatch(int64_t now) {
    // Requests already due are still sent after the window's end, in the drain, on connections
    // that are open: the end stops requests from becoming due, not the sending of those due
    // before it (else the one due in the window's last microseconds was lost to the loop's
    // wake-up latency and ended `unfinished` on a healthy server). No connection is opened then.
    if (plan_.stop.load(std::memory_order_relaxed)) return;
    RequestQueue& queue = scheduler_.queue();
    // HTTP/2 and an HTTP/1.1 pipeline: the requests given to one connection go out in one write.
    Connection* unwritten = nullptr;
    while (!queue.empty() && !ready_.empty()) {
        Connection* c = ready_.back();
        const int free = c->state() == Connection::State::Open ? c->session().free_slots() : 0;
        if (free <= 1) {  // stale, or full once this request is in
            ready_.pop_back();
            c->in_ready_list = false;
            if (free == 0) continue;
        }
        if (unwritten && unwritten != c) {
            unwritten->flush();
            unwritten = nullptr;
        }
        const Request r = queue.front();
        queue.pop_front();
        const bool one_write = c->session().gathers_writes();
        assign(*c, r, now, !one_write);
        if (one_write) unwritten = c;
    }
    if (unwritten) unwritten->flush();  // a failure is settled through on_lost
    // Every slot is busy and a queued request has waited for one longer than a late send's
    // threshold: grow the pool up to the cap. Not at once: a burst the loop released together
    // drains in microseconds on the connections there are. And not while the loop itself is
    // behind (its last wake-up found a request due for longer than that threshold): then the
    // slots look busy because their responses wait, unread, for this loop - more connections
    // would only cost it more (beast at 55 000 req/s grew a capacity step's pool to 1 000 that
    // way). The loop's last wake-up, not the waiting request's release, decides: one wake-up
    // late on a busy machine must not stop a pool that is short from ever growing.
    while (now < plan_.window_end_ns && !queue.empty() && pool_starved(queue.front(), now) &&
           static_cast<int>(queue.size()) > connecting_ && static_cast<int>(connections_.size()) < max_connections_)
        open_pool_connection(add_connection(), now);
}

bool Worker::pool_starved(const Request& waiting, int64_t now) const noexcept {
    return now - waiting.released_ns >= kLateSendNs && loop_late_ns_ < kLateSendNs;
}

void Worker::mark_ready(Connection& c) {
    if (!c.in_ready_list) {
        c.in_ready_list = true;
        ready_.push_back(&c);
    }
}

void Worker::open_pool_connection(Connection& c, int64_t now) {
    if (plan_.stop.load(std::memory_order_relaxed) || now >= plan_.window_end_ns) return;
    c.retry_at_ns = 0;
    if (!c.pool_connecting) {
        c.pool_connecting = true;
        ++connecting_;
    }
    std::string why;
    if (!c.open(why)) {
        c.close();
        on_lost(c, kConnect, why, now);
    }
}

void Worker::fail_queued_request(const std::string& why, int64_t now) {
    RequestQueue& queue = scheduler_.queue();
    const Request r = queue.front();
    queue.pop_front();
    recorder_.error(r, kConnect, why, now);
}

}  // namespace loadbench::generator
