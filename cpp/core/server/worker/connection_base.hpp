#pragma once
// What every server connection is to its worker, and what it keeps the same way whatever its
// protocol and stream: its place in the worker's list, its deadline, which operations it has
// in flight, whether it is closed or lingering - and the helpers that read only that state
// (the timeouts; finish_handler(), which deletes a closed connection once nothing is pending).
//
// Not a template, on purpose: a connection (Connection<Stream>, Http2Connection<Stream>)
// derives from it directly, so the connection's code names this state unqualified. Had it
// come through ConnectionLifecycle<Derived, Stream> (a dependent base), every name would need
// `this->` or a `using` line in each connection. What needs the stream (write, close, linger)
// is that mixin's (connection_lifecycle.hpp).
//
// Connections live in an intrusive list so that the worker's housekeeping tick can enforce
// deadlines without a timer per connection (arming an Asio timer per request costs a timerfd
// system call).
#include "core/server/worker/worker.hpp"

#include <boost/system/error_code.hpp>

#include <chrono>

namespace loadbench::server {

class ConnectionBase {
public:
    using clock = std::chrono::steady_clock;
    static constexpr clock::time_point no_deadline = clock::time_point::max();

    explicit ConnectionBase(Worker& worker) : worker_(worker) {}
    virtual ~ConnectionBase() = default;
    ConnectionBase(const ConnectionBase&) = delete;
    ConnectionBase& operator=(const ConnectionBase&) = delete;

    virtual void start() = 0;
    // Deadline passed (slowloris, idle keep-alive, stuck write, lingering client): close now.
    virtual void expire() = 0;
    // The server is stopping: close if idle, otherwise finish the request in flight first.
    virtual void begin_shutdown() = 0;

    clock::time_point deadline() const { return deadline_; }

protected:
    using error_code = boost::system::error_code;

    std::chrono::milliseconds header_timeout() const {
        return std::chrono::milliseconds(worker_.config().header_timeout_ms);
    }
    std::chrono::milliseconds idle_timeout() const {
        return std::chrono::milliseconds(worker_.config().idle_timeout_ms);
    }

    // Called last in every completion handler: the connection is deleted once closed and idle.
    void finish_handler() {
        if (closed_ && !reading_ && !writing_ && pending_ == 0) worker_.destroy(this);
    }

    friend class Worker;
    // In this order so that the flags end the object and a connection's own flags fill the
    // tail padding after them (C10k memory).
    Worker& worker_;
    clock::time_point deadline_ = no_deadline;
    ConnectionBase* prev_ = nullptr;
    ConnectionBase* next_ = nullptr;
    // Operations in flight other than the read and the write: handshake, timers, TLS shutdown.
    int pending_ = 0;
    bool reading_ = false;
    bool writing_ = false;
    bool closed_ = false;
    bool lingering_ = false;    // linger_close() was called: our FIN or close_notify is on its way
    bool handed_over_ = false;  // its socket went on in another connection (HTTP/2 upgrade)
};

}  // namespace loadbench::server
