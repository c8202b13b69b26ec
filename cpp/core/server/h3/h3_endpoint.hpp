#pragma once
// A worker's HTTP/3 endpoint: its UDP socket on the TLS port's number, the QUIC connections
// that socket's datagrams belong to (found by connection id), and one timer for all of them.
//
// Work per wake-up is the connections it touched, not all of them: a batch of datagrams flushes
// the connections they were for, and the timer is a min-heap of the connections' next wake-ups
// (the Asio timer holds only the earliest, re-armed only when that moves earlier or fires: each
// re-arm is a timerfd system call, and QUIC moves its expiry with nearly every packet). A heap
// entry whose connection has gone or whose wake-up moved later is skipped, or checked and put
// back, when it surfaces.
//
// Which worker owns a connection: every worker binds its own socket to the port with
// SO_REUSEPORT, and the kernel picks the socket for a datagram by a hash of its 4-tuple, so a
// client's datagrams all reach the worker whose socket took its first Initial - no hand-off
// between threads, nothing shared (as the TCP listeners with --accept reuseport). The price: a
// client that changes address or port (migration, a NAT rebinding) lands on another worker,
// which does not know its connection id and drops it; a benchmark on loopback does neither.
// (One shared socket, or connected sockets per 4-tuple, would avoid that at the cost of a
// lock or a hand-off per datagram, or a socket per connection.)
#include "core/server/h3/h3_session.hpp"
#include "core/server/worker/worker.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace loadbench::server {

class Http3Endpoint final : public WorkerService, private ConnectionIdRouter, private DatagramSink {
public:
    Http3Endpoint(boost::asio::io_context& io, boost::asio::ip::udp::socket socket, HandlerContext& context,
                  Http3Credentials& credentials);
    ~Http3Endpoint() override;

    void start() override;
    // The server is stopping: no new connections; every connection goes through its GOAWAY,
    // finishes its streams and closes; then the socket closes (the worker's loop may end).
    void begin_shutdown() override;

private:
    void add_id(std::string_view id, Http3Session* session) override;
    void remove_id(std::string_view id) override;
    bool send(const sockaddr* to, socklen_t to_len, const std::uint8_t* data, std::size_t size) override;

    struct Connection {
        std::unique_ptr<Http3Session> session;
        std::uint64_t serial = 0;  // tells a heap entry of a deleted session from a new one at its address
        std::uint64_t wakeup = Http3Session::never;  // the earliest heap entry that is still current
        bool touched = false;                        // listed in touched_
    };
    struct Wakeup {
        std::uint64_t at;
        std::uint64_t serial;
        Http3Session* session;
        bool operator>(const Wakeup& o) const noexcept { return at > o.at; }
    };

    void receive_next();
    void on_datagram(std::size_t size);
    void touch(Connection& c);
    // Sends what every touched connection (all of them after a blocked send or at shutdown) has
    // ready, deletes finished ones, puts their next wake-ups on the heap, re-arms the timer.
    void settle();
    void settle_one(std::unordered_map<Http3Session*, Connection>::iterator it, std::uint64_t now);
    void arm_timer();
    void on_timer();

    boost::asio::io_context& io_;
    boost::asio::ip::udp::socket socket_;
    boost::asio::ip::udp::endpoint local_;
    boost::asio::ip::udp::endpoint sender_;
    boost::asio::steady_timer timer_;
    std::uint64_t timer_at_ = Http3Session::never;
    HandlerContext& ctx_;
    Http3Credentials& credentials_;
    std::unordered_map<std::string, Http3Session*> by_id_;
    std::unordered_map<Http3Session*, Connection> sessions_;
    std::vector<Http3Session*> touched_;
    std::vector<Wakeup> wakeups_;  // a min-heap (std::greater)
    std::uint64_t next_serial_ = 0;
    bool settle_all_ = false;
    std::vector<std::uint8_t> buffer_ = std::vector<std::uint8_t>(64 * 1024);
    bool stopping_ = false;
    bool awaiting_writable_ = false;  // a send would have blocked: settle() again once it can
    bool closed_ = false;
};

}  // namespace loadbench::server
