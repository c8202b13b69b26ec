#include "core/server/h1/request_parser.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include <gtest/gtest.h>

using namespace loadbench::server;
namespace http = boost::beast::http;

namespace {
// Feeds `input` to a fresh parser; returns the error (need_more if incomplete).
boost::beast::error_code feed(RequestParser& parser, std::string_view input, std::size_t* used = nullptr) {
    boost::beast::error_code ec;
    std::size_t total = 0;
    while (total < input.size()) {
        const auto n = parser.put(boost::asio::const_buffer(input.data() + total, input.size() - total), ec);
        total += n;
        if (ec || parser.is_done() || n == 0) break;
    }
    if (used) *used = total;
    return ec;
}
}  // namespace

TEST(RequestParser, KeepsTargetContentTypeAndBody) {
    RequestScratch scratch;
    RequestParser parser(scratch, 1024, 8192);
    const std::string_view raw =
        "POST /echo?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: text/x\r\nContent-Length: 5\r\n\r\nhelloGET";
    std::size_t used = 0;
    EXPECT_FALSE(feed(parser, raw, &used));
    EXPECT_TRUE(parser.is_done());
    EXPECT_EQ(used, raw.size() - 3);  // stops at the next pipelined request
    EXPECT_EQ(parser.method(), http::verb::post);
    EXPECT_EQ(parser.version(), 11);
    EXPECT_TRUE(parser.keep_alive());
    EXPECT_EQ(scratch.target, "/echo?x=1");
    EXPECT_EQ(scratch.content_type, "text/x");
    EXPECT_EQ(scratch.body, "hello");
}

TEST(RequestParser, ChunkedBody) {
    RequestScratch scratch;
    RequestParser parser(scratch, 1024, 8192);
    EXPECT_FALSE(
        feed(parser,
             "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));
    EXPECT_TRUE(parser.is_done());
    EXPECT_EQ(scratch.body, "abcde");
}

TEST(RequestParser, ReusedScratchIsClearedPerRequest) {
    RequestScratch scratch;
    {
        RequestParser first(scratch, 1024, 8192);
        feed(first, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 3\r\n\r\nxyz");
    }
    RequestParser second(scratch, 1024, 8192);
    EXPECT_FALSE(feed(second, "GET / HTTP/1.0\r\n\r\n"));
    EXPECT_EQ(scratch.target, "/");
    EXPECT_EQ(scratch.content_type, "");
    EXPECT_EQ(scratch.body, "");
    EXPECT_EQ(second.version(), 10);
    EXPECT_FALSE(second.keep_alive());
}

TEST(RequestParser, Limits) {
    RequestScratch scratch;
    RequestParser big_body(scratch, 4, 8192);
    EXPECT_EQ(feed(big_body, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"), http::error::body_limit);
    RequestParser big_header(scratch, 4, 64);
    EXPECT_EQ(feed(big_header, "GET / HTTP/1.1\r\nHost: x\r\nX: " + std::string(100, 'a') + "\r\n\r\n"),
              http::error::header_limit);
    RequestParser partial(scratch, 4, 8192);
    EXPECT_EQ(feed(partial, "GET / HTTP/1.1\r\nHost: x\r\n"), http::error::need_more);
}

TEST(RequestParser, ExpectContinue) {
    RequestScratch scratch;
    RequestParser parser(scratch, 1024, 8192);
    const auto ec = feed(parser, "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n");
    EXPECT_TRUE(!ec || ec == http::error::need_more);
    EXPECT_TRUE(parser.is_header_done());
    EXPECT_FALSE(parser.is_done());
    EXPECT_TRUE(parser.expects_continue());
}

TEST(RequestParser, MalformedIsAnError) {
    RequestScratch scratch;
    RequestParser parser(scratch, 1024, 8192);
    const auto ec = feed(parser, "NOT HTTP AT ALL\r\n\r\n");
    EXPECT_TRUE(ec);
    EXPECT_NE(ec, http::error::need_more);
}

namespace {
// What a fresh parser makes of `input`: the error and our refusal behind it.
struct Outcome {
    boost::beast::error_code ec;
    RequestParser::Refusal refusal;
    std::string target;
};
Outcome parse(std::string_view input) {
    RequestScratch scratch;
    RequestParser parser(scratch, 1024, 8192);
    const auto ec = feed(parser, input);
    return {ec, parser.refusal(), scratch.target};
}
using Refusal = RequestParser::Refusal;
}  // namespace

TEST(RequestParser, HostIsRequiredOnceAndValid) {  // RFC 9112 §3.2
    EXPECT_FALSE(parse("GET / HTTP/1.1\r\nHost: localhost:80\r\n\r\n").ec);
    EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n").ec);  // HTTP/1.0 needs no Host
    for (const char* raw : {"GET / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
                            "GET / HTTP/1.1\r\nHost: user@localhost\r\n\r\n",
                            "GET / HTTP/1.1\r\nHost: localhost/path\r\n\r\n", "GET / HTTP/1.1\r\nHost: a, b\r\n\r\n"}) {
        const Outcome o = parse(raw);
        EXPECT_TRUE(o.ec) << raw;
        EXPECT_EQ(o.refusal, Refusal::bad_request) << raw;
    }
}

TEST(RequestParser, TransferEncodingMustEndInChunked) {  // RFC 9112 §6.1, §6.3
    const char* host = "POST /echo HTTP/1.1\r\nHost: x\r\n";
    auto with = [&](std::string fields) { return std::string(host) + fields + "\r\n0\r\n\r\n"; };
    EXPECT_FALSE(parse(with("Transfer-Encoding: chunked\r\n")).ec);
    EXPECT_FALSE(parse(with("Transfer-Encoding: ,chunked , \r\n")).ec);  // empty list elements are ignored
    for (const char* te : {"chunked, gzip", "gzip", "xchunked", "identity", "", "chunked, chunked", "chunked;x=1"}) {
        const Outcome o = parse(with("Transfer-Encoding: " + std::string(te) + "\r\n"));
        EXPECT_TRUE(o.ec) << te;
        EXPECT_EQ(o.refusal, Refusal::bad_request) << te;
    }
    const Outcome gzip = parse(with("Transfer-Encoding: gzip, chunked\r\n"));
    EXPECT_EQ(gzip.refusal, Refusal::not_implemented);
    const Outcome split = parse(with("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"));
    EXPECT_EQ(split.refusal, Refusal::not_implemented);
    // With Content-Length, in either order: refused (Beast's check, the RFC's "MAY reject").
    EXPECT_TRUE(parse(with("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n")).ec);
    EXPECT_TRUE(parse(with("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n")).ec);
    EXPECT_TRUE(parse(with("Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n")).ec);
    // Transfer-Encoding in HTTP/1.0.
    EXPECT_EQ(parse("POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").refusal,
              Refusal::bad_request);
}

TEST(RequestParser, TargetForms) {  // RFC 9112 §3.2.1-3.2.4
    EXPECT_EQ(parse("GET http://localhost:8080/plaintext?a=1 HTTP/1.1\r\nHost: localhost:8080\r\n\r\n").target,
              "/plaintext?a=1");
    EXPECT_EQ(parse("GET http://localhost HTTP/1.1\r\nHost: localhost\r\n\r\n").target, "/");
    EXPECT_EQ(parse("GET http://localhost?q HTTP/1.1\r\nHost: localhost\r\n\r\n").target, "/?q");
    EXPECT_EQ(parse("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n").target, "*");
    for (const char* raw : {"GET http://user@localhost/ HTTP/1.1\r\nHost: localhost\r\n\r\n",
                            "GET localhost:80 HTTP/1.1\r\nHost: x\r\n\r\n", "GET * HTTP/1.1\r\nHost: x\r\n\r\n",
                            "GET ftp://x/ HTTP/1.1\r\nHost: x\r\n\r\n"}) {
        EXPECT_EQ(parse(raw).refusal, Refusal::bad_request) << raw;
    }
    // Absolute-form still needs a Host field in HTTP/1.1.
    EXPECT_EQ(parse("GET http://localhost/ HTTP/1.1\r\n\r\n").refusal, Refusal::bad_request);
}
