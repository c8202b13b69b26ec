// The connection holder against a plain listening socket of this test: connects, notices a
// peer that hung up, and proves the rest live with one request each.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/generator/loop/connection_holder.hpp"

using loadbench::generator::ConnectionHolder;
using loadbench::generator::HoldConfig;

namespace {

int listen_any(std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 512) != 0) return -1;
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    port = ntohs(address.sin_port);
    return fd;
}

// Reads one request head from `fd` and answers it (blocking; the test's own tiny server).
void answer(int fd, const char* response) {
    std::string head;
    char buffer[512];
    while (head.find("\r\n\r\n") == std::string::npos) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) return;
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) return;
        head.append(buffer, static_cast<std::size_t>(n));
    }
    (void)!::send(fd, response, std::char_traits<char>::length(response), MSG_NOSIGNAL);
}

}  // namespace

TEST(ConnectionHolder, HoldsNoticesHangUpsAndProvesTheRestLive) {
    std::uint16_t port = 0;
    const int listener = listen_any(port);
    ASSERT_GE(listener, 0);
    constexpr int kConnections = 60;
    HoldConfig config;
    config.address = "127.0.0.1";
    config.port = port;
    config.connections = kConnections;
    config.request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    config.connects_in_flight = 16;  // fewer than N: the holder refills as connects complete
    ConnectionHolder holder(config);

    const auto opened = holder.open(10.0);
    EXPECT_EQ(opened.connected, kConnections);
    EXPECT_EQ(opened.failed, 0);
    std::vector<int> accepted;
    for (int i = 0; i < kConnections; ++i) {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        ASSERT_GE(fd, 0);
        accepted.push_back(fd);
    }
    EXPECT_EQ(holder.held(), kConnections);
    for (int i = 0; i < 10; ++i) ::close(accepted[static_cast<std::size_t>(i)]);  // the "server" drops 10
    int held = kConnections;
    for (int tries = 0; tries < 200 && held != kConnections - 10; ++tries) {
        held = holder.held();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(held, kConnections - 10);

    std::thread server([&] {
        for (std::size_t i = 10; i < accepted.size(); ++i)
            answer(accepted[i], i % 2 ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                                      : "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n");
    });
    const auto answered = holder.request_all(10.0);
    server.join();
    EXPECT_EQ(answered.ok, kConnections - 10);
    EXPECT_EQ(answered.failed, 0);
    EXPECT_EQ(ConnectionHolder::bytes_per_slot(), 8u);
    holder.close_all();
    for (std::size_t i = 10; i < accepted.size(); ++i) ::close(accepted[i]);
    ::close(listener);
}

TEST(ConnectionHolder, RefusedConnectionsAreCountedWithTheirReason) {
    std::uint16_t port = 0;
    const int listener = listen_any(port);
    ASSERT_GE(listener, 0);
    ::close(listener);  // nothing listens there now
    HoldConfig config;
    config.address = "127.0.0.1";
    config.port = port;
    config.connections = 5;
    ConnectionHolder holder(config);
    const auto opened = holder.open(5.0);
    EXPECT_EQ(opened.connected, 0);
    EXPECT_EQ(opened.failed, 5);
    EXPECT_NE(opened.first_error.find("refused"), std::string::npos) << opened.first_error;
    EXPECT_EQ(holder.held(), 0);
}

TEST(ConnectionHolder, BadAddressIsRefused) {
    HoldConfig config;
    config.address = "localhost";  // numeric only: the Python layer resolves names
    EXPECT_THROW(ConnectionHolder{config}, std::invalid_argument);
}
