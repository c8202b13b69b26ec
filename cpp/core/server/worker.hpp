#pragma once
// One worker: one thread, one io_context, its own listeners (or a share of accepted
// connections), its own Date/response cache and counters. Nothing on the request path is
// shared with another worker.
#include "core/server/net/accepted_socket.hpp"
#include "core/server/net/asio_internals.hpp"
#include "core/server/net/buffer_pool.hpp"
#include "core/server/config.hpp"
#include "core/server/counters.hpp"
#include "core/server/app/handler_context.hpp"
#include "core/server/net/socket.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

namespace loadbench::server {

class AcceptLoop;
class Http3Credentials;
class Http3Endpoint;
class Worker;

// What the worker needs from a connection, whatever its stream type. Connections live in an
// intrusive list so that the housekeeping tick can enforce deadlines without a timer per
// connection (arming an Asio timer per request costs a timerfd system call).
class ConnectionBase {
public:
    using clock = std::chrono::steady_clock;
    static constexpr clock::time_point no_deadline = clock::time_point::max();

    explicit ConnectionBase(Worker& worker) : worker_(worker) {}
    virtual ~ConnectionBase() = default;
    ConnectionBase(const ConnectionBase&) = delete;
    ConnectionBase& operator=(const ConnectionBase&) = delete;

    virtual void start() = 0;
    // Deadline passed (slowloris, idle keep-alive, stuck write): close now.
    virtual void expire() = 0;
    // The server is stopping: close if idle, otherwise finish the request in flight first.
    virtual void begin_shutdown() = 0;

    clock::time_point deadline() const { return deadline_; }

protected:
    friend class Worker;
    Worker& worker_;
    clock::time_point deadline_ = no_deadline;
    bool handed_over_ = false;  // its socket went on in another connection (HTTP/2 upgrade)
    ConnectionBase* prev_ = nullptr;
    ConnectionBase* next_ = nullptr;
};

class Worker {
public:
    using clock = std::chrono::steady_clock;

    Worker(const ServerConfig& config, unsigned index, boost::asio::ssl::context* tls_context);
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    boost::asio::io_context& io() { return io_; }
    // The io_context's epoll reactor, looked up once (use_service takes a lock).
    Reactor& reactor() { return reactor_; }
    unsigned index() const { return index_; }

    // Before run(): a listening socket (on this worker's io_context) whose connections go to
    // `targets` round-robin (just {this} for SO_REUSEPORT; every worker for a shared listener).
    // `protocol`: what Asio is told the accepted sockets are (see open_unix_listener).
    void add_listener(boost::asio::ip::tcp::acceptor acceptor, const boost::asio::ip::tcp& protocol, bool tls,
                      std::vector<Worker*> targets);

    // Before run(): serve HTTP/3 on this worker's UDP socket (see h3_endpoint.hpp).
    void add_http3(boost::asio::ip::udp::socket socket, Http3Credentials& credentials);

    // Runs the event loop until the worker has stopped and its last connection is gone.
    void run();
    // Thread-safe and idempotent: stop accepting, close idle connections, let in-flight finish.
    void request_stop();

    CountersSnapshot counters() const { return context_.counters.snapshot(); }

    // --- for connections (called on this worker's thread only) -------------------------
    const ServerConfig& config() const { return config_; }
    // What request handling sees of this worker (limits, counters, Date, clock, stopping).
    HandlerContext& context() { return context_; }
    WorkerCounters& counters_mut() { return context_.counters; }
    // Refreshed on every housekeeping tick: deadlines are coarse on purpose (no clock read per request).
    clock::time_point now() const { return context_.now; }
    bool stopping() const { return context_.stopping; }
    // Registers the socket with this worker's reactor and starts a connection on it.
    void adopt(AcceptedSocket socket, const boost::asio::ip::tcp& protocol, bool tls);
    // `from` gives its socket to `to` (a new connection of another protocol), which joins the
    // worker's list; `from` is destroyed as usual once its handler returns, not counted as closed.
    void hand_over(ConnectionBase* from, ConnectionBase* to);
    void destroy(ConnectionBase* connection);  // unlinks and deletes
    // Buffers an HTTP/1.1 connection holds only while it has bytes to read or to send.
    ReadBufferPool& read_buffers() { return read_buffers_; }
    OutputBufferPool& output_buffers() { return output_buffers_; }

private:
    void start_tick();
    void on_tick();
    void begin_stop();

    const ServerConfig& config_;
    const unsigned index_;
    boost::asio::ssl::context* tls_context_;
    boost::asio::io_context io_{1};  // concurrency hint 1: one thread, lighter locking
    Reactor& reactor_;
    boost::asio::steady_timer tick_timer_;
    std::vector<std::unique_ptr<AcceptLoop>> listeners_;
    std::unique_ptr<Http3Endpoint> h3_;
    ConnectionBase* connections_ = nullptr;  // intrusive list head
    std::size_t connection_count_ = 0;
    std::atomic<bool> stop_requested_{false};
    HandlerContext context_;
    ReadBufferPool read_buffers_;
    OutputBufferPool output_buffers_;
};

}  // namespace loadbench::server
