// The response parser must give the same answer however the bytes are split across reads.
#include <gtest/gtest.h>

#include <string>

#include "core/http/request_template.hpp"
#include "core/http/response_parser.hpp"
#include "core/http/url.hpp"

using loadbench::http::ResponseParser;
using Status = ResponseParser::Status;

namespace {

struct Outcome {
    Status status;
    int code;
    bool keep_alive;
    size_t leftover;  // bytes after the response
};

// Feeds `wire` in pieces of `step` bytes, carrying unconsumed bytes like the worker does.
Outcome feed(const std::string& wire, size_t step, bool head = false, bool eof_at_end = false) {
    ResponseParser p;
    p.start(head);
    std::string pending;
    size_t pos = 0;
    while (pos < wire.size()) {
        const size_t n = std::min(step, wire.size() - pos);
        pending.append(wire, pos, n);
        pos += n;
        size_t consumed = 0;
        const Status s = p.parse(pending.data(), pending.size(), consumed);
        pending.erase(0, consumed);
        if (s != Status::NeedMore) return {s, p.status_code(), p.keep_alive(), pending.size() + wire.size() - pos};
    }
    if (eof_at_end) return {p.finish_at_eof(), p.status_code(), p.keep_alive(), 0};
    return {Status::NeedMore, p.status_code(), p.keep_alive(), pending.size()};
}

}  // namespace

TEST(ResponseParser, ContentLengthAnySplit) {
    const std::string wire = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\r\nHello, World!\n";
    for (size_t step = 1; step <= wire.size(); ++step) {
        auto o = feed(wire, step);
        ASSERT_EQ(o.status, Status::Complete) << step;
        EXPECT_EQ(o.code, 200);
        EXPECT_TRUE(o.keep_alive);
        EXPECT_EQ(o.leftover, 0u);
    }
}

TEST(ResponseParser, ChunkedWithExtensionsAndTrailersAnySplit) {
    const std::string wire =
        "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5;name=value\r\nHello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: yes\r\n\r\n";
    for (size_t step = 1; step <= wire.size(); ++step) {
        auto o = feed(wire, step);
        ASSERT_EQ(o.status, Status::Complete) << step;
        EXPECT_EQ(o.code, 201);
    }
}

TEST(ResponseParser, NoBodyFor204And304AndHead) {
    EXPECT_EQ(feed("HTTP/1.1 204 No Content\r\n\r\n", 3).status, Status::Complete);
    EXPECT_EQ(feed("HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n", 7).status, Status::Complete);
    EXPECT_EQ(feed("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", 5, /*head=*/true).status, Status::Complete);
}

TEST(ResponseParser, InterimResponsesAreSkipped) {
    const std::string wire =
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n"
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    for (size_t step : {1u, 4u, 100u}) {
        auto o = feed(wire, step);
        ASSERT_EQ(o.status, Status::Complete);
        EXPECT_EQ(o.code, 200);
    }
}

TEST(ResponseParser, ConnectionCloseAndHttp10) {
    auto close = feed("HTTP/1.1 500 Oops\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 9);
    EXPECT_EQ(close.status, Status::Complete);
    EXPECT_EQ(close.code, 500);
    EXPECT_FALSE(close.keep_alive);
    EXPECT_FALSE(feed("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 9).keep_alive);
    EXPECT_TRUE(feed("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", 9).keep_alive);
}

TEST(ResponseParser, BodyUntilCloseCompletesAtEof) {
    auto o = feed("HTTP/1.1 200 OK\r\n\r\nsome body bytes", 4, false, /*eof_at_end=*/true);
    EXPECT_EQ(o.status, Status::Complete);
    EXPECT_FALSE(o.keep_alive);
    auto cut = feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 4, false, true);
    EXPECT_EQ(cut.status, Status::Error);
}

TEST(ResponseParser, GarbageIsAParseError) {
    EXPECT_EQ(feed("GARBAGE GARBAGE\r\n\r\n", 100).status, Status::Error);
    EXPECT_EQ(feed("\x01\x02\x03\x04\x05\x06 no newline at all", 100).status, Status::Error);
    EXPECT_EQ(feed("HTTP/1.1 2x0 OK\r\n\r\n", 100).status, Status::Error);
    EXPECT_EQ(feed("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", 100).status, Status::Error);
    EXPECT_EQ(feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 100).status, Status::Error);
}

TEST(ResponseParser, BytesAfterTheResponseAreLeftForTheCaller) {
    auto o = feed("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1", 1000);
    EXPECT_EQ(o.status, Status::Complete);
    EXPECT_EQ(o.leftover, 8u);
}

TEST(Url, ParsesSchemesHostsPortsAndTargets) {
    using loadbench::http::parse_url;
    auto a = parse_url("http://127.0.0.1:8080/plaintext?x=1#frag");
    EXPECT_FALSE(a.tls);
    EXPECT_EQ(a.host, "127.0.0.1");
    EXPECT_TRUE(a.host_is_ip_literal);
    EXPECT_EQ(a.port, 8080);
    EXPECT_EQ(a.target, "/plaintext?x=1");
    EXPECT_EQ(a.host_header(), "127.0.0.1:8080");
    auto b = parse_url("HTTPS://[::1]:8443");
    EXPECT_TRUE(b.tls);
    EXPECT_EQ(b.host, "::1");
    EXPECT_EQ(b.target, "/");
    EXPECT_EQ(b.host_header(), "[::1]:8443");
    auto c = parse_url("https://example.com?q");
    EXPECT_EQ(c.port, 443);
    EXPECT_EQ(c.target, "/?q");
    EXPECT_EQ(c.host_header(), "example.com");
    EXPECT_FALSE(c.host_is_ip_literal);
    EXPECT_TRUE(c.unix_path.empty());
}

TEST(Url, UnixFormIsHttpLocalhostOverTheSocket) {
    using loadbench::http::parse_url;
    auto u = parse_url("unix:/run/app.sock");
    EXPECT_EQ(u.unix_path, "/run/app.sock");
    EXPECT_FALSE(u.tls);
    EXPECT_EQ(u.host, "localhost");
    EXPECT_EQ(u.target, "/");
    EXPECT_EQ(u.host_header(), "localhost");
    EXPECT_EQ(parse_url("UNIX:rel.sock").unix_path, "rel.sock");
    EXPECT_THROW(parse_url("unix:"), loadbench::ConfigError);
}

TEST(Url, RejectsBadInputWithAReason) {
    using loadbench::http::parse_url;
    for (const char* bad :
         {"127.0.0.1:80", "ftp://x/", "http://", "http://:80/", "http://host:0/", "http://host:99999/",
          "http://host:abc/", "http://[::1/", "http://[zz]:80/", "http://ho st/", "http://a@b/"}) {
        EXPECT_THROW(parse_url(bad), loadbench::ConfigError) << bad;
    }
}

TEST(RequestTemplate, SerialisesOnceWithDefaults) {
    loadbench::http::RequestTemplate r;
    r.method = "POST";
    r.headers = {{"X-A", "1"}};
    r.body = "abc";
    const auto wire = loadbench::http::serialize_request(r, "/echo", "h:1", false);
    EXPECT_EQ(wire,
              "POST /echo HTTP/1.1\r\nHost: h:1\r\nUser-Agent: loadbench\r\nX-A: 1\r\nContent-Length: 3\r\n"
              "Connection: close\r\n\r\nabc");
    r.headers = {{"Bad Name", "1"}};
    EXPECT_THROW(loadbench::http::serialize_request(r, "/", "h", true), loadbench::ConfigError);
}
