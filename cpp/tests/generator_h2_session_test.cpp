// The generator's Http2Session on raw server frames: the Session contract the load logic relies
// on (slots, send and response times, refusals after GOAWAY, stream errors, per-stream
// timeouts) and the request templates as HTTP/2 header fields.
#include "h2_test_frames.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/generator/sessions/http2_session.hpp"

using namespace loadbench::generator;

namespace {

using loadbench::testing::h2_frame;

std::string u32(uint32_t v) {
    std::string s;
    for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>((v >> shift) & 0xff);
    return s;
}

std::string settings_max_streams(uint32_t n) { return h2_frame(4, 0, 0, std::string("\x00\x03", 2) + u32(n)); }
const std::string kSettingsAck = h2_frame(4, 1, 0);
std::string ok_end(uint32_t stream) { return h2_frame(1, 5, stream, "\x88"); }  // :status 200, END_STREAM

struct Events final : SessionEvents {
    std::vector<int64_t> sent;
    std::vector<std::pair<int, int64_t>> responses;
    std::vector<int64_t> refused;
    std::vector<std::string> stream_errors;
    int goaways = 0;
    std::vector<uint32_t> resets;
    void on_request_sent(Request& r, int64_t now) noexcept override {
        EXPECT_EQ(r.sent_ns, now);
        sent.push_back(r.intended_ns);
    }
    void on_response(Request& r, int status, int64_t) noexcept override {
        responses.emplace_back(status, r.intended_ns);
    }
    void on_refused(Request& r, int64_t) noexcept override { refused.push_back(r.intended_ns); }
    void on_stream_error(Request&, const std::string& why, int64_t) noexcept override { stream_errors.push_back(why); }
    void on_goaway(int64_t) noexcept override { ++goaways; }
    void on_stream_reset(uint32_t code, int64_t) noexcept override { resets.push_back(code); }
};

const std::vector<H2Request>& templates() {
    static const std::vector<H2Request> t = {make_h2_request(loadbench::http::RequestTemplate{}, "/p", "h:1", false)};
    return t;
}

Request request(int64_t intended) {
    Request r;
    r.intended_ns = intended;
    r.assigned_ns = intended;
    r.counted = true;
    return r;
}

std::string drain(Http2Session& s, int64_t now) {
    std::string all;
    for (std::string_view out = s.output(); !out.empty(); out = s.output()) {
        all.append(out);
        s.wrote(out.size(), now);
    }
    return all;
}

}  // namespace

TEST(Http2Session, PrefaceOneStreamBeforeSettingsThenUpToTheServersLimit) {
    Events ev;
    Http2Session s(templates(), 4, false, ev);
    s.reset();
    EXPECT_EQ(s.free_slots(), 4);
    for (int i = 1; i <= 3; ++i) s.submit(request(i));
    EXPECT_EQ(s.in_flight(), 3);
    const std::string first = drain(s, 100);
    EXPECT_EQ(first.rfind("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 0), 0u);
    // Until the server's SETTINGS, one stream goes out; the others wait inside nghttp2.
    EXPECT_EQ(ev.sent, std::vector<int64_t>({1}));
    ASSERT_EQ(s.input(settings_max_streams(2).data(), settings_max_streams(2).size(), 200), InputResult::Ok);
    drain(s, 300);
    EXPECT_EQ(ev.sent, std::vector<int64_t>({1, 2}));  // the limit is 2 now
    EXPECT_EQ(s.free_slots(), 0);
    const std::string answers = kSettingsAck + ok_end(1);
    ASSERT_EQ(s.input(answers.data(), answers.size(), 400), InputResult::Ok);
    ASSERT_EQ(ev.responses.size(), 1u);
    EXPECT_EQ(ev.responses[0], std::make_pair(200, int64_t{1}));
    EXPECT_EQ(s.in_flight(), 2);
    drain(s, 500);
    EXPECT_EQ(ev.sent, std::vector<int64_t>({1, 2, 3}));
    const std::string rest = ok_end(3) + ok_end(5);
    ASSERT_EQ(s.input(rest.data(), rest.size(), 600), InputResult::Ok);
    EXPECT_EQ(ev.responses.size(), 3u);
    EXPECT_EQ(s.in_flight(), 0);
    EXPECT_EQ(s.free_slots(), 2);
    EXPECT_TRUE(s.reusable());
}

TEST(Http2Session, GoawayRefusesStreamsAboveLastStreamIdAndLetsTheOthersFinish) {
    Events ev;
    Http2Session s(templates(), 4, false, ev);
    s.reset();
    const std::string settings = settings_max_streams(100);
    ASSERT_EQ(s.input(settings.data(), settings.size(), 1), InputResult::Ok);
    for (int i = 1; i <= 3; ++i) s.submit(request(i));
    drain(s, 2);
    const std::string goaway = h2_frame(7, 0, 0, u32(3) + u32(0));  // last_stream_id 3: stream 5 refused
    ASSERT_EQ(s.input(goaway.data(), goaway.size(), 3), InputResult::Ok);
    EXPECT_EQ(ev.goaways, 1);
    EXPECT_EQ(ev.refused, std::vector<int64_t>({3}));
    EXPECT_EQ(s.in_flight(), 2);
    EXPECT_FALSE(s.reusable());
    EXPECT_EQ(s.free_slots(), 0);
    const std::string answers = ok_end(1) + ok_end(3);
    ASSERT_EQ(s.input(answers.data(), answers.size(), 4), InputResult::Ok);
    EXPECT_EQ(ev.responses.size(), 2u);
    EXPECT_EQ(s.in_flight(), 0);
    EXPECT_EQ(s.input_eof(5), InputResult::Ok);
}

TEST(Http2Session, RstStreamFailsOnlyThatStreamAndRefusedStreamIsResent) {
    Events ev;
    Http2Session s(templates(), 4, false, ev);
    s.reset();
    const std::string settings = settings_max_streams(100);
    ASSERT_EQ(s.input(settings.data(), settings.size(), 1), InputResult::Ok);
    for (int i = 1; i <= 3; ++i) s.submit(request(i));
    drain(s, 2);
    const std::string resets = h2_frame(3, 0, 1, u32(2)) + h2_frame(3, 0, 3, u32(7));  // INTERNAL_ERROR, REFUSED_STREAM
    ASSERT_EQ(s.input(resets.data(), resets.size(), 3), InputResult::Ok);
    EXPECT_EQ(ev.resets, std::vector<uint32_t>({2, 7}));
    ASSERT_EQ(ev.stream_errors.size(), 1u);
    EXPECT_NE(ev.stream_errors[0].find("INTERNAL_ERROR"), std::string::npos);
    EXPECT_EQ(ev.refused, std::vector<int64_t>({2}));
    EXPECT_EQ(s.in_flight(), 1);
    EXPECT_TRUE(s.reusable());
    EXPECT_EQ(s.free_slots(), 3);
}

TEST(Http2Session, ExpiredStreamsAreTakenAloneAndCancelled) {
    Events ev;
    Http2Session s(templates(), 4, false, ev);
    s.reset();
    const std::string settings = settings_max_streams(100);
    ASSERT_EQ(s.input(settings.data(), settings.size(), 1), InputResult::Ok);
    s.submit(request(10));
    s.submit(request(20));
    drain(s, 30);
    EXPECT_EQ(s.oldest_assigned_ns(), 10);
    Request out[4];
    ASSERT_EQ(s.take_expired(15, out, 4), 1u);
    EXPECT_EQ(out[0].intended_ns, 10);
    EXPECT_EQ(s.in_flight(), 1);
    EXPECT_EQ(s.oldest_assigned_ns(), 20);
    const std::string cancel = drain(s, 40);
    EXPECT_NE(cancel.find(h2_frame(3, 0, 1, u32(8))), std::string::npos);  // RST_STREAM(CANCEL) for stream 1
    // A late answer for the cancelled stream is ignored; the other completes.
    const std::string answers = ok_end(1) + ok_end(3);
    ASSERT_EQ(s.input(answers.data(), answers.size(), 50), InputResult::Ok);
    ASSERT_EQ(ev.responses.size(), 1u);
    EXPECT_EQ(ev.responses[0].second, 20);
}

TEST(Http2Session, ServerBytesThatAreNotHttp2AreAnErrorWithAReason) {
    Events ev;
    Http2Session s(templates(), 2, false, ev);
    s.reset();
    s.submit(request(1));
    drain(s, 1);
    const std::string junk = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    const InputResult r = s.input(junk.data(), junk.size(), 2);
    if (r == InputResult::Ok) {
        EXPECT_FALSE(s.reusable());
    } else {
        EXPECT_FALSE(s.error().empty());
    }
    EXPECT_EQ(s.input_eof(3), InputResult::Error);
    EXPECT_FALSE(s.error().empty());
}

TEST(Http2Session, ConnectionPerRequestCarriesOneStream) {
    Events ev;
    Http2Session s(templates(), 8, true, ev);
    s.reset();
    EXPECT_EQ(s.free_slots(), 1);
    s.submit(request(1));
    EXPECT_EQ(s.free_slots(), 0);
    EXPECT_FALSE(s.reusable());
}

TEST(MakeH2Request, PseudoHeadersFirstConnectionHeadersDroppedHostBecomesAuthority) {
    loadbench::http::RequestTemplate t;
    t.method = "POST";
    t.headers = {{"Host", "example"}, {"Connection", "close"}, {"X-Thing", "1"}, {"Transfer-Encoding", "chunked"}};
    t.body = "abc";
    const H2Request r = make_h2_request(t, "/default", "127.0.0.1:80", true);
    const std::vector<std::pair<std::string, std::string>> want = {
        {":method", "POST"},         {":scheme", "https"}, {":authority", "example"}, {":path", "/default"},
        {"user-agent", "loadbench"}, {"x-thing", "1"},     {"content-length", "3"}};
    EXPECT_EQ(r.fields, want);
    EXPECT_EQ(r.body, "abc");
}
