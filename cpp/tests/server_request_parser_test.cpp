#include "core/server/request_parser.hpp"

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
        feed(parser, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));
    EXPECT_TRUE(parser.is_done());
    EXPECT_EQ(scratch.body, "abcde");
}

TEST(RequestParser, ReusedScratchIsClearedPerRequest) {
    RequestScratch scratch;
    {
        RequestParser first(scratch, 1024, 8192);
        feed(first, "POST /echo HTTP/1.1\r\nContent-Type: a/b\r\nContent-Length: 3\r\n\r\nxyz");
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
    EXPECT_EQ(feed(big_body, "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\n"), http::error::body_limit);
    RequestParser big_header(scratch, 4, 64);
    EXPECT_EQ(feed(big_header, "GET / HTTP/1.1\r\nX: " + std::string(100, 'a') + "\r\n\r\n"),
              http::error::header_limit);
    RequestParser partial(scratch, 4, 8192);
    EXPECT_EQ(feed(partial, "GET / HTTP/1.1\r\nHost: x\r\n"), http::error::need_more);
}

TEST(RequestParser, ExpectContinue) {
    RequestScratch scratch;
    RequestParser parser(scratch, 1024, 8192);
    const auto ec = feed(parser, "POST /echo HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n");
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
