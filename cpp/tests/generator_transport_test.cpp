// The plain transport's arrival times (batch_reads): a read is timed by when its bytes reached
// the kernel, so an open loop that reads responses only when it next wakes to send still
// measures each one's latency to its last byte, not to the loop's coming.
#include "core/generator/base/plan.hpp"
#include "core/generator/transports/transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace loadbench::generator;

namespace {

// A connected loopback TCP pair: {client, server}.
std::pair<int, int> tcp_pair() {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listener, 1), 0);
    EXPECT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    const int client = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const int server = ::accept(listener, nullptr, nullptr);
    ::close(listener);
    ::fcntl(client, F_SETFL, ::fcntl(client, F_GETFL) | O_NONBLOCK);
    return {client, server};
}

}  // namespace

TEST(PlainTransport, TimesAReadByItsArrivalNotByTheRead) {
    const auto [client, server] = tcp_pair();
    auto transport = make_plain_transport();
    transport->attach(client);
    ASSERT_TRUE(transport->time_arrivals());

    // The kernel turns receive timestamps on a few milliseconds after the first socket asks
    // (deferred work): until then a read has no arrival time (0), and the loop reads at once.
    char buffer[64];
    for (int attempt = 0; attempt < 200; ++attempt) {
        ASSERT_EQ(::send(server, "x", 1, 0), 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        size_t n = 0;
        ASSERT_EQ(transport->read(buffer, sizeof buffer, n), IoStatus::Ok);
        if (transport->arrival_ns() != 0) break;
    }
    ASSERT_NE(transport->arrival_ns(), 0) << "no receive timestamps within a second";

    const int64_t before_send = monotonic_ns();
    ASSERT_EQ(::send(server, "HTTP/1.1", 8, 0), 8);
    const int64_t after_send = monotonic_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the loop comes late to read

    size_t n = 0;
    ASSERT_EQ(transport->read(buffer, sizeof buffer, n), IoStatus::Ok);
    const int64_t read_at = monotonic_ns();
    EXPECT_EQ(n, 8u);
    const int64_t arrival = transport->arrival_ns();
    // Loopback delivers inside send(); 1 ms either side covers the two clocks' conversion.
    EXPECT_GE(arrival, before_send - 1'000'000);
    EXPECT_LE(arrival, after_send + 1'000'000);
    EXPECT_GE(read_at - arrival, 45'000'000);  // the 50 ms the bytes waited are not latency

    size_t none = 0;
    EXPECT_EQ(transport->read(buffer, sizeof buffer, none), IoStatus::WantRead);
    transport->detach();
    ::close(client);
    ::close(server);
}

TEST(PlainTransport, UntimedUnlessAsked) {
    const auto [client, server] = tcp_pair();
    auto transport = make_plain_transport();
    transport->attach(client);
    ASSERT_EQ(::send(server, "x", 1, 0), 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    char buffer[8];
    size_t n = 0;
    ASSERT_EQ(transport->read(buffer, sizeof buffer, n), IoStatus::Ok);
    EXPECT_EQ(transport->arrival_ns(), 0);  // 0: not known, the reader's clock stands
    transport->detach();
    ::close(client);
    ::close(server);
}
