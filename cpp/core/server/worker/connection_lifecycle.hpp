#pragma once
// What every server connection does the same way with its stream, whatever its protocol:
// write a buffer out, close, close gracefully (our FIN or TLS close_notify, then a bounded
// wait for the client's), and run the TLS shutdown. Connection (HTTP/1.1) and
// Http2Connection (HTTP/2) take it as a mixin and keep only their protocol.
//
// A CRTP mixin, not virtual calls: the write on the keep-alive path and its completion reach
// the protocol (Derived::on_written) as direct, inlinable calls, as when each connection
// wrote its own. The state it works on is the connection's own: Derived derives directly from
// ConnectionBase (connection_base.hpp: the flags, the deadline, finish_handler) - which keeps
// those names plain in the connection's code - and provides, as private members with this
// class a friend:
//   Stream stream_;
//   void on_written();        // the whole buffer given to write() has left (async path)
//   void read_discarding();   // start a read whose bytes are dropped (plain TCP lingering)
//   void on_close();          // cancel the protocol's own timers
// and calls, from every completion handler it owns, finish_handler() last. This class is a
// dependent base of Derived: Derived calls its members as this->write(), this->close(), ...
#include "core/server/worker/connection_base.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <type_traits>

namespace loadbench::server {

template <class Derived, class Stream>
class ConnectionLifecycle {
    using error_code = boost::system::error_code;

public:
    // How long a graceful close waits for the client to close too.
    static constexpr auto linger_time = std::chrono::seconds(1);

protected:
    // Writes `out`, which stays untouched until Derived::on_written(). Plain TCP tries the
    // send right here first: it almost always takes everything, which saves the reactor round
    // trip and handler dispatch of an async_write. True: all of it left now (no handler
    // follows). False: the rest is being written (writing_; the client must take it before the
    // idle timeout), or the send failed and the connection is closed. `send_flags` go with the
    // synchronous send only (e.g. MSG_MORE); a rest written later goes without them.
    bool write(const std::string& out, [[maybe_unused]] int send_flags = 0) {
        Derived& self = derived();
        std::size_t already_sent = 0;
        if constexpr (!Stream::is_tls) {
            error_code ec;
            already_sent = self.stream_.tcp().send(boost::asio::buffer(out), send_flags, ec);
            if (ec && ec != boost::asio::error::would_block && ec != boost::asio::error::try_again) {
                close();
                return false;
            }
            if (!ec && already_sent == out.size()) return true;
        }
        self.deadline_ = self.worker_.now() + self.idle_timeout();  // a client that stops reading is dropped
        self.writing_ = true;
        self.stream_.async_write(boost::asio::buffer(out.data() + already_sent, out.size() - already_sent),
                                 [this](error_code ec, std::size_t) { on_write(ec); });
        return false;
    }

    // Everything was written (the last response, or a GOAWAY): send our FIN (plain TCP) or
    // close_notify (TLS), then read and discard until the client closes too, bounded by
    // linger_time, so that unread input does not turn our last bytes into a reset.
    void linger_close() {
        Derived& self = derived();
        self.lingering_ = true;
        self.deadline_ = self.worker_.now() + linger_time;
        if constexpr (Stream::is_tls) {
            if (self.reading_) {
                error_code ignored;
                self.stream_.tcp().cancel(ignored);  // lingering_read_done starts the TLS shutdown
            } else {
                start_tls_shutdown();
            }
        } else {
            error_code ignored;
            self.stream_.tcp().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
            if (!self.reading_) self.read_discarding();
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
        Derived& self = derived();
        if (self.closed_) return;
        self.closed_ = true;
        error_code ignored;
        self.stream_.tcp().close(ignored);  // pending operations complete with operation_aborted
        self.on_close();
    }

private:
    Derived& derived() {
        static_assert(std::is_base_of_v<ConnectionBase, Derived>, "a connection derives from ConnectionBase");
        return static_cast<Derived&>(*this);
    }

    void on_write(error_code ec) {
        Derived& self = derived();
        self.writing_ = false;
        if (!self.closed_) {
            if (ec) {
                close();
            } else {
                self.on_written();
            }
        }
        self.finish_handler();
    }

    // TLS: close_notify once, then close (whatever the client answers, or after linger_time).
    void start_tls_shutdown() {
        Derived& self = derived();
        if (tls_shutdown_started_ || self.closed_) return;
        tls_shutdown_started_ = true;
        self.pending_ += 1;
        self.stream_.tls().async_shutdown([this](error_code) {
            Derived& connection = derived();
            connection.pending_ -= 1;
            if (!connection.closed_) close();
            connection.finish_handler();
        });
    }

    bool tls_shutdown_started_ = false;
};

}  // namespace loadbench::server
