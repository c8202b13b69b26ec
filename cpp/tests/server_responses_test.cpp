#include "core/server/base/counters.hpp"
#include "core/server/h1/responses.hpp"
#include "core/server/status_lines.hpp"

#include <gtest/gtest.h>

using namespace loadbench::server;

namespace {
constexpr std::string_view date = "Sun, 06 Nov 1994 08:49:37 GMT";
}

TEST(Responses, CachedPlaintextBytes) {
    ResponseCache cache;
    cache.rebuild(date, {});
    EXPECT_EQ(cache.plaintext(ConnectionHeader::none),
              "HTTP/1.1 200 OK\r\nServer: loadbench\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
              "Content-Type: text/plain\r\nContent-Length: 14\r\n\r\nHello, World!\n");
    EXPECT_NE(cache.json(ConnectionHeader::close).find("Connection: close\r\n"), std::string_view::npos);
    EXPECT_NE(cache.json(ConnectionHeader::keep_alive).find("Connection: keep-alive\r\n"), std::string_view::npos);
    cache.rebuild("Mon, 07 Nov 1994 08:49:37 GMT", {});
    EXPECT_NE(cache.plaintext(ConnectionHeader::none).find("Mon, 07 Nov"), std::string_view::npos);
}

TEST(Responses, ErrorWithExtraHeader) {
    std::string out;
    append_response(out, {405, date, "text/plain", ConnectionHeader::none, "GET"}, "no\n");
    EXPECT_EQ(out,
              "HTTP/1.1 405 Method Not Allowed\r\nServer: loadbench\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
              "Content-Type: text/plain\r\nContent-Length: 3\r\nAllow: GET\r\n\r\nno\n");
    out.clear();
    append_response(out, {431, date, "text/plain", ConnectionHeader::close, {}}, "");
    EXPECT_EQ(out.rfind("HTTP/1.1 431 Request Header Fields Too Large\r\n", 0), 0u);
}

TEST(StatusLines, ReadyErrorStopped) {
    EXPECT_EQ(ready_line(42, "127.0.0.1", 8080, std::nullopt, 2),
              R"({"event":"ready","pid":42,"host":"127.0.0.1","http_port":8080,"https_port":null,"workers":2})");
    EXPECT_EQ(ready_line(42, "127.0.0.1", std::nullopt, std::nullopt, 1, "/tmp/s.sock"),
              R"({"event":"ready","pid":42,"host":"127.0.0.1","http_port":null,"https_port":null,"workers":1,)"
              R"("unix":"/tmp/s.sock"})");
    EXPECT_EQ(error_line("bad \"x\"\n"), R"({"event":"error","error":"bad \"x\"\n"})");
    WorkerCounters a, b;
    a.connection_opened();
    a.connection_opened();
    a.connection_closed();
    a.request(RequestKind::plaintext);
    b.request(RequestKind::plaintext);
    b.request(RequestKind::not_found);
    CountersSnapshot total = a.snapshot();
    total += b.snapshot();
    EXPECT_EQ(total.connections_accepted, 2u);
    EXPECT_EQ(total.connections_open, 1u);
    EXPECT_EQ(total.requests_total(), 3u);
    const auto line = stopped_line(total);
    EXPECT_NE(line.find(R"("requests":{"plaintext":2,"json":0,)"), std::string::npos);
    EXPECT_NE(line.find(R"("not_found":1)"), std::string::npos);
    EXPECT_NE(line.find(R"("requests_total":3,)"), std::string::npos);
    b.h2_connection();
    b.h2_stream();
    b.h2_request();
    b.h2_goaway();
    total = a.snapshot();
    total += b.snapshot();
    EXPECT_EQ(total.h1_requests(), 2u);
    EXPECT_EQ(total.h1_connections(), 1u);
    const auto with_h2 = stopped_line(total);
    EXPECT_NE(with_h2.find(R"("h1":{"connections":1,"requests":2})"), std::string::npos) << with_h2;
    EXPECT_NE(
        with_h2.find(
            R"("h2":{"connections":1,"streams":1,"requests":1,"streams_refused":0,"goaways":1,"resets_received":0},)"),
        std::string::npos)
        << with_h2;
    // HTTP/3 connections and responses are neither h1 nor h2 (h1 is what is left).
    b.connection_opened();
    b.h3_connection();
    b.h3_handshake();
    b.request(RequestKind::json);
    b.h3_request();
    // A second one, resumed with 0-RTT accepted; resumed and zero_rtt sum over workers too.
    a.connection_opened();
    a.h3_connection();
    a.h3_handshake();
    a.h3_resumed();
    a.h3_zero_rtt();
    total = a.snapshot();
    total += b.snapshot();
    EXPECT_EQ(total.h1_requests(), 2u);
    EXPECT_EQ(total.h1_connections(), 1u);
    const auto with_h3 = stopped_line(total);
    EXPECT_NE(with_h3.find(R"("h3":{"connections":2,"handshakes":2,"resumed":1,"zero_rtt":1,"requests":1,)"
                           R"("goaways":0}})"),
              std::string::npos)
        << with_h3;
}
