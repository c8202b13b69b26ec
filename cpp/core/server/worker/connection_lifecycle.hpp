#pragma once
// What every server connection does the same way, whatever its protocol: own the stream,
// write a buffer out, close, close gracefully (our FIN or TLS close_notify, then a bounded
// wait for the client's), and delete itself once closed with nothing pending. Connection
// (HTTP/1.1) and Http2Connection (HTTP/2) derive from it and keep only their protocol.
//
// A CRTP base, not virtual calls: the write on the keep-alive path and its completion reach
// the protocol (Derived::on_written) as direct, inlinable calls, as when each connection
// wrote its own. Derived provides, as private members with this class a friend:
//   void on_written();        // the whole buffer given to write() has left (async path)
//   void read_discarding();   // start a read whose bytes are dropped (plain TCP lingering)
//   void on_close();          // cancel the protocol's own timers
// and calls, from every completion handler it owns, finish_handler() last.
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>

#include "core/server/net/streams.hpp"
#include "core/server/worker/worker.hpp"

namespace loadbench::server {

template <class Derived, class Stream>
class ConnectionLifecycle : public ConnectionBase {
public:
    // How long a graceful close waits for the client to close too.
    static constexpr auto linger_time = std::chrono::seconds(1);

    // Deadline passed (slowloris, idle keep-alive, stuck write, lingering client): close now.
    void expire() override {
        close();
        finish_handler();
    }

protected:
    using error_code = boost::system::error_code;

    template <class... StreamArgs>
    explicit ConnectionLifecycle(Worker& worker, StreamArgs&&... stream_args)
        : ConnectionBase(worker), stream_(std::forward<StreamArgs>(stream_args)...) {}

    std::chrono::milliseconds header_timeout() const {
        return std::chrono::milliseconds(worker_.config().header_timeout_ms);
    }
    std::chrono::milliseconds idle_timeout() const {
        return std::chrono::milliseconds(worker_.config().idle_timeout_ms);
    }

    // Writes `out`, which stays untouched until Derived::on_written(). Plain TCP tries the
    // send right here first: it almost always takes everything, which saves the reactor round
    // trip and handler dispatch of an async_write. True: all of it left now (no handler
    // follows). False: the rest is being written (writing_; the client must take it before the
    // idle timeout), or the send failed and the connection is closed. `send_flags` go with the
    // synchronous send only (e.g. MSG_MORE); a rest written later goes without them.
    bool write(const std::string& out, [[maybe_unused]] int send_flags = 0) {
        std::size_t already_sent = 0;
        if constexpr (!Stream::is_tls) {
            error_code ec;
            already_sent = stream_.tcp().send(boost::asio::buffer(out), send_flags, ec);
            if (ec && ec != boost::asio::error::would_block && ec != boost::asio::error::try_again) {
                close();
                return false;
            }
            if (!ec && already_sent == out.size()) return true;
        }
        deadline_ = worker_.now() + idle_timeout();  // a client that stops reading is dropped
        writing_ = true;
        stream_.async_write(boost::asio::buffer(out.data() + already_sent, out.size() - already_sent),
                            [this](error_code ec, std::size_t) { on_write(ec); });
        return false;
    }

    // Everything was written (the last response, or a GOAWAY): send our FIN (plain TCP) or
    // close_notify (TLS), then read and discard until the client closes too, bounded by
    // linger_time, so that unread input does not turn our last bytes into a reset.
    void linger_close() {
        lingering_ = true;
        deadline_ = worker_.now() + linger_time;
        if constexpr (Stream::is_tls) {
            if (reading_) {
                error_code ignored;
                stream_.tcp().cancel(ignored);  // lingering_read_done starts the TLS shutdown
            } else {
                start_tls_shutdown();
            }
        } else {
            error_code ignored;
            stream_.tcp().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
            if (!reading_) derived().read_discarding();
        }
    }

    // A read that completed while lingering (its bytes are dropped).
    void lingering_read_done(error_code ec) {
        if constexpr (Stream::is_tls) {
            start_tls_shutdown();  // the read was cancelled for it
        } else if (ec) {
            close();  // the client closed too (or reset): done
        } else {
            derived().read_discarding();
        }
    }

    void close() {
        if (closed_) return;
        closed_ = true;
        error_code ignored;
        stream_.tcp().close(ignored);  // pending operations complete with operation_aborted
        derived().on_close();
    }

    // Called last in every completion handler: the connection is deleted once closed and idle.
    void finish_handler() {
        if (closed_ && !reading_ && !writing_ && pending_ == 0) worker_.destroy(this);
    }

    Stream stream_;
    // Operations in flight other than the read and the write: handshake, timers, TLS shutdown.
    int pending_ = 0;
    bool reading_ = false;
    bool writing_ = false;
    bool closed_ = false;
    bool lingering_ = false;  // linger_close() was called: our FIN or close_notify is on its way

private:
    Derived& derived() { return static_cast<Derived&>(*this); }

    void on_write(error_code ec) {
        writing_ = false;
        if (!closed_) {
            if (ec) {
                close();
            } else {
                derived().on_written();
            }
        }
        finish_handler();
    }

    // TLS: close_notify once, then close (whatever the client answers, or after linger_time).
    void start_tls_shutdown() {
        if (tls_shutdown_started_ || closed_) return;
        tls_shutdown_started_ = true;
        pending_ += 1;
        stream_.tls().async_shutdown([this](error_code) {
            pending_ -= 1;
            if (!closed_) close();
            finish_handler();
        });
    }

    bool tls_shutdown_started_ = false;
};

}  // namespace loadbench::server
