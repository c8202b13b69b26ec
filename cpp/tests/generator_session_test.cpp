// The generator's parts on their own: Http1Session (the Session contract the load logic relies
// on), the Recorder (each request counted once, unfinished open-loop requests in the corrected
// histogram, drain outcomes in the window's last interval) and the Scheduler's queue.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/generator/http1_session.hpp"
#include "core/generator/recorder.hpp"
#include "core/generator/scheduler.hpp"

using namespace loadbench::generator;

namespace {

struct Events final : SessionEvents {
    std::vector<int64_t> sent;
    std::vector<std::pair<int, int64_t>> responses;
    void on_request_sent(Request& r, int64_t now) noexcept override {
        EXPECT_EQ(r.sent_ns, now);
        sent.push_back(now);
    }
    void on_response(Request&, int status, int64_t now) noexcept override { responses.emplace_back(status, now); }
};

const std::vector<std::string> kWire = {"GET / HTTP/1.1\r\nHost: x\r\n\r\n"};
const std::vector<bool> kHead = {false};
const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

Request request(int64_t intended, bool counted = true) {
    Request r;
    r.intended_ns = intended;
    r.assigned_ns = intended;
    r.counted = counted;
    return r;
}

}  // namespace

TEST(Http1Session, OneSlotSendTimeFromTheFirstWriteResponseFromTheLastByte) {
    Events events;
    Http1Session s(kWire, kHead, events);
    EXPECT_EQ(s.free_slots(), 1);
    s.submit(request(100));
    EXPECT_EQ(s.free_slots(), 0);
    EXPECT_EQ(s.in_flight(), 1);
    EXPECT_EQ(s.output(), kWire[0]);
    // A partial write: the send time is the first write's, taken per request (not per batch).
    s.wrote(5, 1000);
    s.wrote(kWire[0].size() - 5, 2000);
    EXPECT_TRUE(s.output().empty());
    ASSERT_EQ(events.sent.size(), 1u);
    EXPECT_EQ(events.sent[0], 1000);
    // The response in two reads: complete at the second one's time.
    EXPECT_EQ(s.input(kOk.data(), 10, 3000), InputResult::Ok);
    EXPECT_TRUE(events.responses.empty());
    EXPECT_EQ(s.input(kOk.data() + 10, kOk.size() - 10, 4000), InputResult::Ok);
    ASSERT_EQ(events.responses.size(), 1u);
    EXPECT_EQ(events.responses[0], std::make_pair(200, int64_t{4000}));
    EXPECT_TRUE(s.reusable());
    EXPECT_EQ(s.free_slots(), 1);
}

TEST(Http1Session, BytesAfterTheResponseAreAParseErrorAndAnUnansweredRequestIsTakenBack) {
    Events events;
    Http1Session s(kWire, kHead, events);
    s.submit(request(1));
    s.wrote(kWire[0].size(), 2);
    const std::string two = kOk + "xx";
    EXPECT_EQ(s.input(two.data(), two.size(), 3), InputResult::Error);
    EXPECT_NE(s.error().find("after a complete response"), std::string::npos);

    Http1Session t(kWire, kHead, events);
    t.submit(request(7));
    Request out[4];
    bool answered[4];
    ASSERT_EQ(t.take_in_flight(out, answered, 4), 1u);
    EXPECT_EQ(out[0].intended_ns, 7);
    EXPECT_FALSE(answered[0]);
    EXPECT_EQ(t.in_flight(), 0);
}

TEST(Recorder, OpenLoopSendCountedOnceAndUnfinishedInTheCorrectedHistogram) {
    RunPlan plan;
    plan.open_loop = true;
    plan.window_start_ns = 0;
    plan.window_end_ns = 1'000'000'000;
    plan.last_interval = 0;
    Recorder rec(plan);
    Request r = request(0);
    rec.due(r);
    rec.sent(r, 2'000'000);  // 2 ms late
    rec.sent(r, 9'000'000);  // re-sent after the server closed the connection: not counted again
    EXPECT_EQ(rec.measurements().sends, 1u);
    EXPECT_EQ(rec.measurements().late_sends, 1u);
    EXPECT_EQ(rec.measurements().lateness_us.total_count(), 1);
    rec.response(r, 200, 1'500'000'000);  // in the drain: counted, in the window's last interval
    Request waiting = request(900'000'000);
    rec.due(waiting);
    rec.unfinished(waiting, 1'400'000'000);
    Request warmup = request(-5, false);
    rec.due(warmup);
    rec.unfinished(warmup, 1'400'000'000);
    const Measurements& m = rec.measurements();
    EXPECT_EQ(m.due, 2u);
    EXPECT_EQ(m.responses, 1u);
    EXPECT_EQ(m.unfinished, 1u);
    EXPECT_EQ(m.latency_us.total_count(), 2);  // the response and the unfinished one's wait
    EXPECT_EQ(m.latency_us.max(), 1'500'000);
    EXPECT_EQ(m.latency_uncorrected_us.total_count(), 1);
    rec.finish();
    ASSERT_EQ(rec.timeline().size(), 1u);
    EXPECT_EQ(rec.timeline()[0].index, 0);
}

TEST(RequestQueue, GrowsAndKeepsOrderWithRequeuesAtTheFront) {
    RequestQueue q;
    for (int i = 0; i < 100; ++i) q.push_back(request(i));
    q.pop_front();
    q.push_front(request(-1));
    EXPECT_EQ(q.size(), 100u);
    EXPECT_EQ(q.front().intended_ns, -1);
    q.pop_front();
    for (int i = 1; i < 100; ++i, q.pop_front()) EXPECT_EQ(q.front().intended_ns, i);
    EXPECT_TRUE(q.empty());
}
