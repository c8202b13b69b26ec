// The engine end to end on real loopback sockets, in C++ so the sanitizer builds check the
// worker and connection state machines too: exact counts, keep-alive and close, refused ports,
// open loop.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/generator/engine.hpp"

using namespace loadbench::generator;

namespace {

// A one-thread-per-connection HTTP/1.1 server answering every request with `response`,
// closing after each one when `close_each` is set; counts what it served.
class LoopbackServer {
public:
    LoopbackServer(std::string response, bool close_each) : response_(std::move(response)), close_each_(close_each) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        ::listen(listener_, 128);
        socklen_t len = sizeof addr;
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    ~LoopbackServer() {
        stopping_ = true;
        ::shutdown(listener_, SHUT_RDWR);
        ::close(listener_);
        acceptor_.join();
        for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
        for (auto& t : handlers_) t.join();
        for (int fd : fds_) ::close(fd);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
    uint64_t served() const { return served_.load(); }
    uint64_t accepted() const { return accepted_.load(); }

private:
    void accept_loop() {
        while (!stopping_) {
            const int fd = ::accept(listener_, nullptr, nullptr);
            if (fd < 0) return;
            ++accepted_;
            fds_.push_back(fd);
            handlers_.emplace_back([this, fd] { serve(fd); });
        }
    }
    void serve(int fd) {
        std::string pending;
        char buf[4096];
        while (true) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) return;
            pending.append(buf, static_cast<size_t>(n));
            size_t end;
            while ((end = pending.find("\r\n\r\n")) != std::string::npos) {
                pending.erase(0, end + 4);
                ++served_;
                if (::send(fd, response_.data(), response_.size(), MSG_NOSIGNAL) < 0) return;
                if (close_each_) {
                    ::shutdown(fd, SHUT_WR);
                    return;
                }
            }
        }
    }

    std::string response_;
    bool close_each_;
    int listener_ = -1;
    uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<uint64_t> served_{0};
    std::atomic<uint64_t> accepted_{0};
    std::thread acceptor_;
    std::vector<std::thread> handlers_;
    std::vector<int> fds_;
};

RunResult run_to_end(EngineConfig config) {
    Engine engine(std::move(config));
    engine.start();
    while (!engine.wait_for(0.05)) {
    }
    return engine.result();
}

const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\nHello, World!\n";

}  // namespace

TEST(GeneratorEngine, ExactCountOverThreadsAndConnections) {
    LoopbackServer server(kOk, false);
    EngineConfig c;
    c.url = server.url();
    c.connections = 5;
    c.threads = 2;
    c.total_requests = 2000;
    const RunResult r = run_to_end(c);
    EXPECT_EQ(r.totals.responses, 2000u);
    EXPECT_EQ(server.served(), 2000u);
    EXPECT_EQ(r.totals.status_codes[200], 2000u);
    EXPECT_EQ(r.totals.latency_us.total_count(), 2000);
    EXPECT_EQ(r.totals.connections_opened, 5u);
    EXPECT_EQ(r.totals.bytes_read, 2000u * kOk.size());
    EXPECT_GT(r.duration_s, 0.0);
}

TEST(GeneratorEngine, ServerClosingEveryResponseIsReconnectedNotAnError) {
    LoopbackServer server("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", true);
    EngineConfig c;
    c.url = server.url();
    c.connections = 2;
    c.total_requests = 100;
    const RunResult r = run_to_end(c);
    EXPECT_EQ(r.totals.responses, 100u);
    EXPECT_EQ(r.totals.reconnects, 100u);
    uint64_t errors = 0;
    for (auto e : r.totals.errors) errors += e;
    EXPECT_EQ(errors, 0u);
    EXPECT_EQ(server.accepted(), 100u);
}

TEST(GeneratorEngine, RefusedPortGivesConnectErrorsAndEndsOnTime) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);  // nothing listens there now
    EngineConfig c;
    c.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/";
    c.connections = 2;
    c.duration_s = 0.3;
    const RunResult r = run_to_end(c);
    EXPECT_EQ(r.totals.responses, 0u);
    EXPECT_GT(r.totals.errors[kConnect], 0u);
    EXPECT_NEAR(r.duration_s, 0.3, 0.01);
}

TEST(GeneratorEngine, OpenLoopSendsOnScheduleAndRecordsBothLatencies) {
    LoopbackServer server(kOk, false);
    EngineConfig c;
    c.url = server.url();
    c.connections = 2;
    c.max_connections = 8;
    c.threads = 2;
    c.rate = 1000;
    c.total_requests = 300;
    const RunResult r = run_to_end(c);
    EXPECT_TRUE(r.open_loop);
    EXPECT_EQ(r.totals.responses, 300u);
    EXPECT_EQ(r.totals.sends, 300u);
    EXPECT_EQ(r.totals.latency_uncorrected_us.total_count(), 300);
    EXPECT_EQ(r.totals.lateness_us.total_count(), 300);
    EXPECT_GE(r.totals.latency_us.value_at_percentile(50), r.totals.latency_uncorrected_us.value_at_percentile(50));
    EXPECT_EQ(server.served(), 300u);
}

TEST(GeneratorEngine, OpenLoopEveryRequestDueInTheWindowHasOneOutcome) {
    LoopbackServer server("", false);  // reads every request, never answers
    EngineConfig c;
    c.url = server.url();
    c.connections = 1;
    c.max_connections = 1;
    c.rate = 200;
    c.duration_s = 0.3;
    c.timeout_s = 0.2;
    const RunResult r = run_to_end(c);
    const Measurements& m = r.totals;
    uint64_t errors = 0;
    for (auto e : m.errors) errors += e;
    EXPECT_EQ(m.due, 60u);  // one every 5 ms for 0.3 s
    EXPECT_EQ(m.responses, 0u);
    EXPECT_EQ(errors, m.errors[kTimeout]);
    EXPECT_GE(m.errors[kTimeout], 1u);  // the request in flight at the end times out in the drain
    EXPECT_EQ(m.responses + errors + m.unfinished, m.due);
    EXPECT_GT(m.unfinished, 0u);
    // the never-sent requests are in the corrected histogram with the time they had waited
    EXPECT_EQ(static_cast<uint64_t>(m.latency_us.total_count()), m.unfinished);
    EXPECT_EQ(m.sends, server.served());
}

TEST(GeneratorEngine, BadConfigurationIsAConfigError) {
    EngineConfig c;
    c.url = "http://127.0.0.1:1/";
    c.connections = 0;
    EXPECT_THROW(Engine{c}, loadbench::ConfigError);
    c.connections = 1;
    c.cpus = {100000};
    EXPECT_THROW(Engine{c}, loadbench::ConfigError);
    c.cpus = {};
    c.url = "gopher://x/";
    EXPECT_THROW(Engine{c}, loadbench::ConfigError);
}
