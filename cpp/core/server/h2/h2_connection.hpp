#pragma once
// One HTTP/2 connection (h2c with prior knowledge, or h2 chosen by ALPN) over the server's
// own socket: reads go into Http2Session::receive, frames from Http2Session::send are
// written. Unlike HTTP/1.1 it reads and writes at the same time (one read and one write in
// flight), so a stream waiting on /delay or a slow body never holds up the others.
//
// A Connection (HTTP/1.1) that sees the preface, or ALPN "h2", hands its socket and the bytes
// it already read over to this class (Worker::hand_over). Lifetime rules are the same as
// Connection's: the worker owns it; it deletes itself when closed and nothing is pending.
// Writing, closing, lingering and the TLS shutdown are ConnectionLifecycle's (this->write(),
// this->close(), ...); the state they share is ConnectionBase's.
//
// Bounded buffering: at most one write chunk (write_chunk bytes) is produced before the
// previous one has left; nghttp2 produces DATA only inside the client's flow-control windows;
// at most --h2-max-streams streams are served at once; and while a write is stuck with frames
// queued behind it, reading stops - so a client that never reads costs a bounded amount.
#include "core/server/worker/connection_base.hpp"
#include "core/server/worker/connection_lifecycle.hpp"
#include "core/server/h2/h2_session.hpp"
#include "core/server/net/streams.hpp"
#include "core/server/worker/worker.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>

#include <map>
#include <memory>

namespace loadbench::server {

template <class Stream>
class Http2Connection final : public ConnectionBase, private ConnectionLifecycle<Http2Connection<Stream>, Stream> {
    using Lifecycle = ConnectionLifecycle<Http2Connection<Stream>, Stream>;

public:
    static constexpr std::size_t read_buffer_size = 16 * 1024;
    static constexpr std::size_t write_chunk = 64 * 1024;

    // `already` = bytes the HTTP/1.1 connection read before it knew (the preface, maybe more).
    Http2Connection(Worker& worker, Stream&& stream, const char* already, std::size_t size)
        : ConnectionBase(worker),
          stream_(std::move(stream)),
          session_(worker.context()),
          in_(new char[read_buffer_size]),
          delay_timer_(worker.io()),
          early_(already, size) {
        out_.reserve(write_chunk + 16 * 1024);
    }

    void start() override {
        if (!early_.empty()) {
            if (!session_.receive(early_.data(), early_.size())) fatal_ = true;
            std::string().swap(early_);
        }
        if (worker_.stopping()) session_.shutdown();
        pump();
    }

    void begin_shutdown() override {
        if (!closed_ && !lingering_) {
            session_.shutdown();  // GOAWAY: no new streams, the open ones finish
            pump();
        }
        finish_handler();
    }

    void expire() override {
        this->close();
        finish_handler();
    }

private:
    friend Lifecycle;

    // After every event: write what the session has, arm /delay timers, keep a read going,
    // set the deadline - or close once the session is done and everything was written.
    void pump() {
        if (closed_ || lingering_) return;
        if (!writing_) {
            out_.clear();
            // Also after a fatal receive: the GOAWAY saying why goes out before the close.
            if (!session_.send(out_, write_chunk)) fatal_ = true;
            if (!out_.empty()) write_out();
            if (closed_) return;
        }
        arm_delays();
        if (!writing_ && (fatal_ || session_.finished())) return this->linger_close();
        // Backpressure: while the client does not take our writes and frames pile up, stop
        // reading its requests (on_written resumes); TCP then holds the client back.
        if (!reading_ && !fatal_ && session_.want_read() && !(writing_ && session_.backlogged())) start_read();
        update_deadline();
    }

    void update_deadline() {
        if (session_.streams_awaiting_headers() > 0) {
            deadline_ = session_.headers_since() + header_timeout();
        } else if (session_.delayed_streams() > 0 && !writing_) {
            deadline_ = no_deadline;  // the server, not the client, is what we wait for
        } else {
            // Idle connection, a body that must keep moving, or a write the client must take.
            deadline_ = worker_.now() + idle_timeout();
        }
    }

    // --- reading -----------------------------------------------------------------------
    void start_read() {
        reading_ = true;
        stream_.async_read_some(boost::asio::buffer(in_.get(), read_buffer_size),
                                [this](error_code ec, std::size_t n) { on_read(ec, n); });
    }

    void on_read(error_code ec, std::size_t n) {
        reading_ = false;
        if (!closed_) {
            if (lingering_) {
                this->lingering_read_done(ec);
            } else if (ec) {
                this->close();  // the client went away (or reset): nothing left to answer to
            } else {
                if (!session_.receive(in_.get(), n)) fatal_ = true;
                pump();
            }
        }
        finish_handler();
    }

    // --- /delay ------------------------------------------------------------------------
    void arm_delays() {
        auto& fresh = session_.new_delays();
        if (!fresh.empty()) {
            const auto now = clock::now();
            for (const auto& d : fresh) delays_.emplace(now + std::chrono::milliseconds(d.ms), d.stream_id);
            fresh.clear();
        }
        if (delays_.empty()) return;
        const auto next = delays_.begin()->first;
        if (timer_pending_ && next >= armed_for_) return;
        armed_for_ = next;
        delay_timer_.expires_at(next);  // cancels a wait for a later time (its handler sees aborted)
        timer_pending_ = true;
        pending_ += 1;
        delay_timer_.async_wait([this, armed = next](error_code ec) {
            pending_ -= 1;
            if (armed == armed_for_) timer_pending_ = false;
            if (!closed_ && !ec) {
                const auto now = clock::now();
                while (!delays_.empty() && delays_.begin()->first <= now) {
                    session_.finish_delay(delays_.begin()->second);
                    delays_.erase(delays_.begin());
                }
                pump();
            }
            finish_handler();
        });
    }

    // --- writing -----------------------------------------------------------------------
    // Writes out_; while it leaves at once (plain TCP) and the session has more (a body
    // larger than one chunk), goes round again.
    void write_out() {
        while (this->write(out_)) {
            out_.clear();
            if (fatal_ || !session_.want_write()) return;
            if (!session_.send(out_, write_chunk)) fatal_ = true;
            if (out_.empty()) return;
        }
    }

    // The async rest of write_out() has left.
    void on_written() {
        out_.clear();
        pump();
    }

    // --- closing (ConnectionLifecycle::linger_close once the session is done) -----------
    // Lingering (plain TCP): keep reading; on_read drops the bytes.
    void read_discarding() { start_read(); }

    void on_close() { delay_timer_.cancel(); }

    // The flags first: they fill ConnectionBase's tail padding.
    bool timer_pending_ = false;
    bool fatal_ = false;
    Stream stream_;  // ConnectionLifecycle writes and closes through it too
    Http2Session session_;
    std::unique_ptr<char[]> in_;
    std::string out_;
    boost::asio::steady_timer delay_timer_;
    std::multimap<clock::time_point, std::int32_t> delays_;  // due time -> stream
    clock::time_point armed_for_{};
    std::string early_;
};

}  // namespace loadbench::server
