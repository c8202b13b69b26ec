#pragma once
// One worker: one thread, one io_context, its own services (listeners' accept loops, an
// HTTP/3 endpoint), its connections, its own Date cache and counters. Nothing on the request
// path is shared with another worker.
//
// The worker knows no protocol: the server (server.cpp) gives it its services, and an accept
// loop (accept_loop.hpp) starts the HTTP/1.1 connections on it, so the protocols build on the
// worker and never the other way round.
#include "core/server/net/asio_internals.hpp"
#include "core/server/net/buffer_pool.hpp"
#include "core/server/base/config.hpp"
#include "core/server/base/counters.hpp"
#include "core/server/app/handler_context.hpp"
#include "core/server/net/socket.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

namespace loadbench::server {

// What a worker runs besides its connections: a listener's accept loop, an HTTP/3 endpoint.
class WorkerService {
public:
    virtual ~WorkerService() = default;
    virtual void start() = 0;
    // The server is stopping: take nothing new; let what is in flight finish.
    virtual void begin_shutdown() = 0;
};

class ConnectionBase;  // connection_base.hpp; the worker holds its connections by pointer only

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

    // The read buffers it lends (read_buffers()): HTTP/1.1's most unparsed input.
    static constexpr std::size_t read_buffer_size = 16 * 1024;

    // Before run(): a service on this worker's io_context, started by run().
    void add_service(std::unique_ptr<WorkerService> service);

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
    // The TLS context of its https listeners (null: none).
    boost::asio::ssl::context* tls_context() const { return tls_context_; }
    // A new connection (on a socket registered with this worker's reactor) joins the worker's
    // list, is counted as opened and started.
    void add_connection(ConnectionBase* connection);
    // `from` gives its socket to `to` (a new connection of another protocol), which joins the
    // worker's list; `from` is destroyed as usual once its handler returns, not counted as closed.
    void hand_over(ConnectionBase* from, ConnectionBase* to);
    void destroy(ConnectionBase* connection);  // unlinks and deletes
    // Buffers an HTTP/1.1 connection holds only while it has bytes to read or to send.
    ReadBufferPool& read_buffers() { return read_buffers_; }
    OutputBufferPool& output_buffers() { return output_buffers_; }

private:
    void link(ConnectionBase* connection);  // into the intrusive list
    void start_tick();
    void on_tick();
    void begin_stop();

    const ServerConfig& config_;
    const unsigned index_;
    boost::asio::ssl::context* tls_context_;
    boost::asio::io_context io_{1};  // concurrency hint 1: one thread, lighter locking
    Reactor& reactor_;
    boost::asio::steady_timer tick_timer_;
    std::vector<std::unique_ptr<WorkerService>> services_;
    ConnectionBase* connections_ = nullptr;  // intrusive list head
    std::size_t connection_count_ = 0;
    std::atomic<bool> stop_requested_{false};
    HandlerContext context_;
    ReadBufferPool read_buffers_;
    OutputBufferPool output_buffers_;
};

}  // namespace loadbench::server
