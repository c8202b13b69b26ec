// The event loop's timers (no descriptor: a heap bounding the wait): a timer runs once, not
// before it is due, bounds a wait that asked for longer, and stale armings (moved later,
// disarmed, removed) never run. Times are asserted as lower bounds only (never how fast).
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/generator/loop/event_loop.hpp"
#include "core/generator/base/plan.hpp"

using loadbench::generator::EventLoop;
using loadbench::generator::monotonic_ns;
using loadbench::generator::TimerHandler;

namespace {

constexpr int64_t ms = 1'000'000;

struct Recording final : TimerHandler {
    void on_timer(int64_t now) override {
        fired.push_back(now);
        if (rearm_at_now) loop->arm(timer, now);  // wants to run again at once
    }
    std::vector<int64_t> fired;
    EventLoop* loop = nullptr;
    int timer = -1;
    bool rearm_at_now = false;
};

// Runs the loop until `until` (monotonic), each wait asking for the whole rest of it.
void run_until(EventLoop& loop, int64_t until) {
    for (int64_t now = monotonic_ns(); now < until; now = monotonic_ns()) loop.run_once(now, until, false);
}

}  // namespace

TEST(EventLoopTimers, RunsOnceWhenDueAndBoundsALongerWait) {
    EventLoop loop;
    ASSERT_EQ(loop.error(), "");
    Recording r;
    const int t = loop.add_timer(r);
    const int64_t start = monotonic_ns();
    loop.arm(t, start + 5 * ms);
    EXPECT_EQ(loop.next_timer(), start + 5 * ms);
    // One wait that asked for ten seconds returns at the timer, which has run.
    loop.run_once(monotonic_ns(), start + 10'000 * ms, false);
    ASSERT_EQ(r.fired.size(), 1u);
    EXPECT_GE(r.fired[0], start + 5 * ms);
    EXPECT_EQ(loop.armed_at(t), INT64_MAX);  // fired: disarmed until armed again
    EXPECT_EQ(loop.next_timer(), INT64_MAX);
    run_until(loop, monotonic_ns() + 10 * ms);
    EXPECT_EQ(r.fired.size(), 1u);
}

TEST(EventLoopTimers, ArmingLaterOrDisarmingLeavesNoEarlyRun) {
    EventLoop loop;
    Recording later, disarmed;
    const int a = loop.add_timer(later);
    const int b = loop.add_timer(disarmed);
    const int64_t start = monotonic_ns();
    loop.arm(a, start + 2 * ms);
    loop.arm(a, start + 20 * ms);  // the 2 ms entry is stale now
    loop.arm(b, start + 2 * ms);
    loop.arm(b, INT64_MAX);
    EXPECT_EQ(loop.next_timer(), start + 20 * ms);
    run_until(loop, start + 30 * ms);
    ASSERT_EQ(later.fired.size(), 1u);
    EXPECT_GE(later.fired[0], start + 20 * ms);
    EXPECT_TRUE(disarmed.fired.empty());
}

TEST(EventLoopTimers, ARemovedTimerNeverRunsAndItsSlotServesTheNext) {
    EventLoop loop;
    Recording gone, next;
    const int t = loop.add_timer(gone);
    const int64_t start = monotonic_ns();
    loop.arm(t, start + 2 * ms);
    loop.remove_timer(t);
    const int u = loop.add_timer(next);
    EXPECT_EQ(u, t);                         // the slot is reused
    EXPECT_EQ(loop.armed_at(u), INT64_MAX);  // and starts disarmed: the old arming is stale
    loop.arm(u, start + 4 * ms);
    run_until(loop, start + 10 * ms);
    EXPECT_TRUE(gone.fired.empty());
    ASSERT_EQ(next.fired.size(), 1u);
    EXPECT_GE(next.fired[0], start + 4 * ms);
}

TEST(EventLoopTimers, EarliestFirstAndAReArmAtNowWaitsForTheNextRound) {
    EventLoop loop;
    Recording first, second;
    const int a = loop.add_timer(first);
    const int b = loop.add_timer(second);
    second.loop = &loop;
    second.timer = b;
    second.rearm_at_now = true;
    const int64_t start = monotonic_ns();
    loop.arm(b, start + 3 * ms);
    loop.arm(a, start + 1 * ms);
    EXPECT_EQ(loop.next_timer(), start + 1 * ms);
    while (second.fired.empty()) loop.run_once(monotonic_ns(), start + 1'000 * ms, false);
    ASSERT_EQ(first.fired.size(), 1u);
    EXPECT_LE(first.fired[0], second.fired[0]);
    // The handler armed itself for "now": it ran once in that round (no loop inside run_once)
    // and is due again, so the next round runs it without waiting.
    EXPECT_EQ(second.fired.size(), 1u);
    EXPECT_LE(loop.next_timer(), monotonic_ns());
    second.rearm_at_now = false;
    loop.run_once(monotonic_ns(), monotonic_ns() + 1'000 * ms, false);
    EXPECT_EQ(second.fired.size(), 2u);
}
