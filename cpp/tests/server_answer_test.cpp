// The protocol-neutral handler (answer_for) and both encoders over one HandlerContext: the
// HTTP/1.1 RequestProcessor and the HTTP/2 Http2Session (raw frames in, frames out, no socket).
#include "core/server/app/answer.hpp"
#include "core/server/h2/h2_session.hpp"
#include "core/server/app/handler_context.hpp"
#include "core/server/h1/request_processor.hpp"

#include "h2_test_frames.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace loadbench::server;
using boost::beast::http::verb;

TEST(ServerAnswer, RoutesYieldProtocolNeutralAnswers) {
    const Answer plain = answer_for(match_route(verb::get, "/"));
    EXPECT_EQ(plain.status, 200u);
    EXPECT_EQ(plain.kind, RequestKind::plaintext);
    EXPECT_EQ(plain.body, "Hello, World!\n");
    EXPECT_EQ(plain.content_type, "text/plain");
    EXPECT_TRUE(answer_for(match_route(verb::post, "/echo")).echo);
    const Answer delay = answer_for(match_route(verb::get, "/delay?ms=25"));
    EXPECT_TRUE(delay.delayed);
    EXPECT_EQ(delay.delay_ms, 25u);
    EXPECT_EQ(delay.kind, RequestKind::delay);
    const Answer wrong = answer_for(match_route(verb::get, "/echo"));
    EXPECT_EQ(wrong.status, 405u);
    EXPECT_EQ(wrong.allow, "POST");
    EXPECT_EQ(answer_for(match_route(verb::get, "/nope")).status, 404u);
    EXPECT_EQ(answer_for(match_route(verb::get, "/delay?ms=x")).status, 400u);
    EXPECT_EQ(limit_answer(RequestKind::body_too_large).status, 413u);
    EXPECT_EQ(limit_answer(RequestKind::header_too_large).status, 431u);
}

TEST(ServerAnswer, Http1EncoderKeepsThePrebuiltFastPath) {
    ServerConfig config;
    HandlerContext ctx(config);
    RequestProcessor requests;
    std::string out;
    const std::string in = "GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_EQ(requests.process(ctx, in.data(), in.size(), out), in.size());
    const std::string cached(prebuilt_responses(ctx).plaintext(ConnectionHeader::none));
    ASSERT_EQ(out.compare(0, cached.size(), cached), 0);
    EXPECT_NE(out.find("HTTP/1.1 404 Not Found\r\n", cached.size()), std::string::npos);
    const auto counts = ctx.counters.snapshot();
    EXPECT_EQ(counts.requests_total(), 2u);
    EXPECT_EQ(counts.h1_requests(), 2u);
    EXPECT_EQ(counts.h2.requests, 0u);
}

TEST(ServerAnswer, PrebuiltResponsesFollowAltSvc) {
    // The prebuilt responses are rebuilt when the context's Alt-Svc (or Date) changes, not
    // per request: a response after --h3 is advertised carries it.
    ServerConfig config;
    HandlerContext ctx(config);
    RequestProcessor requests;
    const std::string in = "GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n";
    std::string before;
    requests.process(ctx, in.data(), in.size(), before);
    EXPECT_EQ(before.find("Alt-Svc"), std::string::npos);
    ctx.advertise_http3(4433);
    std::string after;
    requests.process(ctx, in.data(), in.size(), after);
    EXPECT_NE(after.find("Alt-Svc: h3=\":4433\"\r\n"), std::string::npos);
    EXPECT_EQ(after, std::string(prebuilt_responses(ctx).plaintext(ConnectionHeader::none)));
}

TEST(ServerAnswer, HeadIsGetWithoutContent) {  // RFC 9110 §9.3.2
    ServerConfig config;
    HandlerContext ctx(config);
    RequestProcessor requests;
    std::string out;
    const std::string in = "HEAD /plaintext HTTP/1.1\r\nHost: x\r\n\r\nHEAD /echo HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_EQ(requests.process(ctx, in.data(), in.size(), out), in.size());
    std::string head(prebuilt_responses(ctx).plaintext(ConnectionHeader::none));
    head.resize(head.size() - plaintext_body.size());
    ASSERT_EQ(out.compare(0, head.size(), head), 0);  // Content-Length: 14, no content
    const std::string rest = out.substr(head.size());
    EXPECT_EQ(rest.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u);
    EXPECT_NE(rest.find("Allow: POST\r\n"), std::string::npos);
    EXPECT_EQ(rest.substr(rest.size() - 4), "\r\n\r\n");  // the 405 carries no content either
    EXPECT_EQ(answer_for(match_route(verb::post, "/json")).allow, "GET, HEAD");
}

TEST(ServerAnswer, RefusedRequestEndsTheConnectionAndNothingAfterItIsParsed) {
    ServerConfig config;
    HandlerContext ctx(config);
    RequestProcessor requests;
    std::string out;
    // "chunked, gzip": the body's end is unknown; "0\r\n\r\n" must not become a second request.
    const std::string in =
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n";
    requests.process(ctx, in.data(), in.size(), out);
    EXPECT_EQ(out.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u);
    EXPECT_NE(out.find("Connection: close\r\n"), std::string::npos);
    EXPECT_EQ(out.find("HTTP/1.1", 1), std::string::npos);  // one response only
    EXPECT_TRUE(requests.close_after_write());
    out.clear();
    RequestProcessor unknown;
    const std::string gzip = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
    unknown.process(ctx, gzip.data(), gzip.size(), out);
    EXPECT_EQ(out.rfind("HTTP/1.1 501 Not Implemented\r\n", 0), 0u);
    EXPECT_TRUE(unknown.close_after_write());
}

namespace {
using loadbench::testing::h2_frame;
// GET / with :authority (static table entries, :authority as a literal).
const std::string get_root = std::string("\x82\x84\x86\x01\x09", 5) + "127.0.0.1";
}  // namespace

TEST(ServerAnswer, Http2SessionAnswersAndAdvertisesItsLimits) {
    ServerConfig config;
    config.h2_max_streams = 2;
    HandlerContext ctx(config);
    Http2Session session(ctx);
    std::string out;
    ASSERT_TRUE(session.send(out, 1 << 16));
    // Our SETTINGS first, MAX_CONCURRENT_STREAMS = 2 written in (not nghttp2's "unlimited").
    ASSERT_GE(out.size(), 15u);
    EXPECT_EQ(out[3], 0x4);
    EXPECT_EQ(out.substr(9, 6), std::string("\x00\x03\x00\x00\x00\x02", 6));

    std::string in(http2_preface);
    in += h2_frame(0x4, 0, 0, "");
    for (std::uint32_t id : {1u, 3u, 5u}) in += h2_frame(0x1, 0x5, id, get_root);  // the third is one too many
    ASSERT_TRUE(session.receive(in.data(), in.size()));
    out.clear();
    ASSERT_TRUE(session.send(out, 1 << 16));
    EXPECT_NE(out.find("Hello, World!\n"), std::string::npos);
    const auto counts = ctx.counters.snapshot();
    EXPECT_EQ(counts.h2.connections, 1u);
    EXPECT_EQ(counts.h2.streams, 2u);
    EXPECT_EQ(counts.h2.requests, 2u);
    EXPECT_EQ(counts.h2.streams_refused, 1u);
    EXPECT_EQ(counts.requests[static_cast<std::size_t>(RequestKind::plaintext)], 2u);
    EXPECT_TRUE(session.want_read());

    session.shutdown();
    out.clear();
    ASSERT_TRUE(session.send(out, 1 << 16));
    EXPECT_EQ(ctx.counters.snapshot().h2.goaways, 1u);
    EXPECT_TRUE(session.finished());  // no stream left open: done after the GOAWAY
}

TEST(ServerAnswer, Http2BadPrefaceIsFatal) {
    ServerConfig config;
    HandlerContext ctx(config);
    Http2Session session(ctx);
    const std::string junk = "PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n";
    EXPECT_FALSE(session.receive(junk.data(), junk.size()));
    std::string out;
    session.send(out, 1 << 16);
    EXPECT_TRUE(session.finished());
}
