// The generator's parts on their own: Http1Session (the Session contract the load logic relies
// on, one request at a time and pipelined), the Recorder (each request counted once, unfinished
// open-loop requests in the corrected histogram, drain outcomes in the window's last interval)
// and the Scheduler's queue.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/generator/sessions/http1_session.hpp"
#include "core/generator/base/recorder.hpp"
#include "core/generator/loop/scheduler.hpp"

using namespace loadbench::generator;

namespace {

struct Events final : SessionEvents {
    std::vector<int64_t> sent;
    std::vector<std::pair<int, int64_t>> responses;
    std::vector<int64_t> answered;  // intended_ns of each answered request, in order
    std::vector<int64_t> answered_sent_ns;
    void on_request_sent(Request& r, int64_t now) noexcept override {
        EXPECT_EQ(r.sent_ns, now);
        sent.push_back(now);
    }
    void on_response(Request& r, int status, int64_t now) noexcept override {
        responses.emplace_back(status, now);
        answered.push_back(r.intended_ns);
        answered_sent_ns.push_back(r.sent_ns);
    }
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

TEST(Http1Session, DepthOneWritesTheTemplateItselfNotACopy) {
    Events events;
    Http1Session s(kWire, kHead, events, 1);
    s.submit(request(1));
    EXPECT_EQ(s.output().data(), kWire[0].data());
}

namespace {

const std::vector<std::string> kGetHead = {"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD /b HTTP/1.1\r\nHost: x\r\n\r\n"};
const std::vector<bool> kGetHeadIsHead = {false, true};

Request request_of(uint32_t template_index, int64_t intended) {
    Request r = request(intended);
    r.template_index = template_index;
    return r;
}

std::string response(int status, const std::string& body, const std::string& extra = "") {
    return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
           extra + "\r\n" + body;
}

}  // namespace

TEST(Http1SessionPipeline, RequestsGoOutBackToBackAndSeveralResponsesInOneReadAnswerThemInOrder) {
    Events events;
    Http1Session s(kWire, kHead, events, 4);
    EXPECT_EQ(s.free_slots(), 4);
    for (int i = 0; i < 3; ++i) s.submit(request(10 + i));
    EXPECT_EQ(s.in_flight(), 3);
    EXPECT_EQ(s.free_slots(), 1);
    EXPECT_EQ(s.output(), kWire[0] + kWire[0] + kWire[0]);
    // The first write ends inside the second request: each request's send time is that of the
    // write its first byte went out with.
    const size_t first = kWire[0].size() + 3;
    s.wrote(first, 1000);
    EXPECT_EQ(s.output(), kWire[0].substr(3) + kWire[0]);
    s.wrote(2 * kWire[0].size() - 3, 2000);
    EXPECT_TRUE(s.output().empty());
    EXPECT_EQ(events.sent, (std::vector<int64_t>{1000, 1000, 2000}));
    const std::string three = response(200, "ok") + response(201, "") + response(202, "abc");
    EXPECT_EQ(s.input(three.data(), three.size(), 3000), InputResult::Ok);
    ASSERT_EQ(events.responses.size(), 3u);
    EXPECT_EQ(events.responses[0], std::make_pair(200, int64_t{3000}));
    EXPECT_EQ(events.responses[1].first, 201);
    EXPECT_EQ(events.responses[2].first, 202);
    EXPECT_EQ(events.answered, (std::vector<int64_t>{10, 11, 12}));
    EXPECT_EQ(events.answered_sent_ns, (std::vector<int64_t>{1000, 1000, 2000}));
    EXPECT_EQ(s.in_flight(), 0);
    EXPECT_EQ(s.free_slots(), 4);
    EXPECT_TRUE(s.reusable());
    // The slots refill, and the gathered bytes start over (no growth, nothing left behind).
    s.submit(request(20));
    EXPECT_EQ(s.output(), kWire[0]);
}

TEST(Http1SessionPipeline, ResponsesSplitAcrossReadsAnywhere) {
    const std::string stream = response(200, "hello") + response(404, "") + response(200, std::string(300, 'x'));
    // Every split point, in two reads: the responses complete exactly once each, in order.
    for (size_t cut = 1; cut < stream.size(); ++cut) {
        Events events;
        Http1Session s(kWire, kHead, events, 3);
        for (int i = 0; i < 3; ++i) s.submit(request(i));
        s.wrote(s.output().size(), 1);
        ASSERT_EQ(s.input(stream.data(), cut, 10), InputResult::Ok) << cut;
        ASSERT_EQ(s.input(stream.data() + cut, stream.size() - cut, 20), InputResult::Ok) << cut << s.error();
        ASSERT_EQ(events.responses.size(), 3u) << cut;
        EXPECT_EQ(events.responses[1].first, 404);
        EXPECT_EQ(events.answered, (std::vector<int64_t>{0, 1, 2}));
        EXPECT_EQ(s.carried_bytes(), 0u);
        EXPECT_EQ(s.in_flight(), 0);
    }
    // One byte per read.
    Events events;
    Http1Session s(kWire, kHead, events, 3);
    for (int i = 0; i < 3; ++i) s.submit(request(i));
    s.wrote(s.output().size(), 1);
    for (size_t i = 0; i < stream.size(); ++i) ASSERT_EQ(s.input(stream.data() + i, 1, 100 + i), InputResult::Ok);
    ASSERT_EQ(events.responses.size(), 3u);
    EXPECT_EQ(events.responses[2].second, static_cast<int64_t>(100 + stream.size() - 1));
}

TEST(Http1SessionPipeline, AHeadResponseInTheMiddleHasNoBody) {
    Events events;
    Http1Session s(kGetHead, kGetHeadIsHead, events, 4);
    s.submit(request_of(0, 1));
    s.submit(request_of(1, 2));
    s.submit(request_of(0, 3));
    EXPECT_EQ(s.output(), kGetHead[0] + kGetHead[1] + kGetHead[0]);
    s.wrote(s.output().size(), 5);
    // The HEAD response announces 5 bytes it does not send: the next bytes are the third
    // response, not its body.
    const std::string stream =
        response(200, "ok") + "HTTP/1.1 200 X\r\nContent-Length: 5\r\n\r\n" + response(203, "xy");
    EXPECT_EQ(s.input(stream.data(), stream.size(), 9), InputResult::Ok) << s.error();
    ASSERT_EQ(events.responses.size(), 3u);
    EXPECT_EQ(events.responses[2].first, 203);
    EXPECT_EQ(events.answered, (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(s.in_flight(), 0);
}

TEST(Http1SessionPipeline, ConnectionCloseMidPipelineLeavesTheRestUnansweredToBeSentAgain) {
    Events events;
    Http1Session s(kWire, kHead, events, 4);
    for (int i = 0; i < 4; ++i) s.submit(request(i));
    s.wrote(s.output().size(), 1);
    const std::string two = response(200, "a") + response(200, "b", "Connection: close\r\n");
    EXPECT_EQ(s.input(two.data(), two.size(), 2), InputResult::Ok);
    EXPECT_EQ(events.responses.size(), 2u);
    EXPECT_FALSE(s.reusable());
    EXPECT_TRUE(s.output().empty());  // nothing more goes out on it
    EXPECT_EQ(s.in_flight(), 2);
    Request out[4];
    bool answered[4];
    ASSERT_EQ(s.take_in_flight(out, answered, 4), 2u);
    EXPECT_EQ(out[0].intended_ns, 2);
    EXPECT_EQ(out[1].intended_ns, 3);
    EXPECT_FALSE(answered[0]);
    EXPECT_FALSE(answered[1]);
    EXPECT_EQ(s.in_flight(), 0);
    // Bytes after such a response (in the same read) are the server's framing error.
    Http1Session t(kWire, kHead, events, 4);
    for (int i = 0; i < 3; ++i) t.submit(request(i));
    t.wrote(t.output().size(), 1);
    const std::string more = response(200, "a", "Connection: close\r\n") + response(200, "b");
    EXPECT_EQ(t.input(more.data(), more.size(), 2), InputResult::Error);
    EXPECT_NE(t.error().find("ended the connection"), std::string::npos);
}

TEST(Http1SessionPipeline, TakenBackOldestFirstOnlyTheOldestAnsweredAndTheSlotAccounting) {
    Events events;
    Http1Session s(kWire, kHead, events, 3);
    Request a = request(1);
    a.assigned_ns = 50;
    Request b = request(2, false);
    b.assigned_ns = 40;  // sent again from a lost connection: assigned earlier
    s.submit(a);
    s.submit(b);
    EXPECT_EQ(s.oldest_assigned_ns(), 40);
    EXPECT_TRUE(s.carries_counted());
    s.wrote(s.output().size(), 60);
    const std::string first = response(200, "ok");
    EXPECT_EQ(s.input(first.data(), first.size(), 70), InputResult::Ok);
    EXPECT_FALSE(s.carries_counted());  // only b, not counted, is left
    EXPECT_EQ(s.oldest_assigned_ns(), 40);
    s.submit(request(3));
    const std::string partial = "HTTP/1.1 200 OK\r\nContent-";
    EXPECT_EQ(s.input(partial.data(), partial.size(), 80), InputResult::Ok);
    Request out[1];
    bool answered[1];
    ASSERT_EQ(s.take_in_flight(out, answered, 1), 1u);  // capacity 1: one at a time
    EXPECT_EQ(out[0].intended_ns, 2);
    EXPECT_TRUE(answered[0]);
    ASSERT_EQ(s.take_in_flight(out, answered, 1), 1u);
    EXPECT_EQ(out[0].intended_ns, 3);
    EXPECT_FALSE(answered[0]);
    EXPECT_EQ(s.in_flight(), 0);
    EXPECT_EQ(s.oldest_assigned_ns(), INT64_MAX);
    EXPECT_FALSE(s.carries_counted());
}

TEST(Http1SessionPipeline, AResponseDelimitedByTheCloseEndsThePipeline) {
    Events events;
    Http1Session s(kWire, kHead, events, 3);
    for (int i = 0; i < 3; ++i) s.submit(request(i));
    s.wrote(s.output().size(), 1);
    const std::string until_close = "HTTP/1.1 200 OK\r\n\r\nbody";
    EXPECT_EQ(s.input(until_close.data(), until_close.size(), 2), InputResult::Ok);
    EXPECT_EQ(s.input_eof(3), InputResult::Ok);
    ASSERT_EQ(events.responses.size(), 1u);
    EXPECT_FALSE(s.reusable());
    EXPECT_EQ(s.in_flight(), 2);
}

TEST(Recorder, OpenLoopSendCountedOnceAndUnfinishedInTheCorrectedHistogram) {
    RunPlan plan;
    plan.open_loop = true;
    plan.window_start_ns = 0;
    plan.window_end_ns = 1'000'000'000;
    plan.last_interval = 0;
    Recorder rec(plan);
    Request r = request(0);
    rec.due(r, 1'500'000);   // the loop released it 1.5 ms late: the generator's own delay
    rec.slot_wait(r);        // and it found every connection busy
    rec.sent(r, 2'000'000);  // 2 ms late
    rec.sent(r, 9'000'000);  // re-sent after the server closed the connection: not counted again
    EXPECT_EQ(rec.measurements().sends, 1u);
    EXPECT_EQ(rec.measurements().late_sends, 1u);
    EXPECT_EQ(rec.measurements().lateness_us.total_count(), 1);
    EXPECT_EQ(rec.measurements().loop_lateness_us.total_count(), 1);
    EXPECT_EQ(rec.measurements().loop_lateness_us.max(), 1'500);
    EXPECT_EQ(rec.measurements().slot_waits, 1u);
    rec.response(r, 200, 1'500'000'000);  // in the drain: counted, in the window's last interval
    Request waiting = request(900'000'000);
    rec.due(waiting, 900'000'000);
    rec.unfinished(waiting, 1'400'000'000);
    Request warmup = request(-5, false);
    rec.due(warmup, 0);
    rec.slot_wait(warmup);  // a warm-up request waits uncounted
    rec.unfinished(warmup, 1'400'000'000);
    const Measurements& m = rec.measurements();
    EXPECT_EQ(m.due, 2u);
    EXPECT_EQ(m.loop_lateness_us.total_count(), 2);
    EXPECT_EQ(m.slot_waits, 1u);
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
    EXPECT_EQ(q.from_back(0).intended_ns, 99);  // the newest: what a release left waiting
    EXPECT_EQ(q.from_back(98).intended_ns, 1);
    for (int i = 1; i < 100; ++i, q.pop_front()) EXPECT_EQ(q.front().intended_ns, i);
    EXPECT_TRUE(q.empty());
}
