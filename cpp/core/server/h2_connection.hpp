#pragma once
// One HTTP/2 connection (h2c with prior knowledge, or h2 chosen by ALPN) over the server's
// own socket: reads go into Http2Session::receive, frames from Http2Session::send are
// written. Unlike HTTP/1.1 it reads and writes at the same time (one read and one write in
// flight), so a stream waiting on /delay or a slow body never holds up the others.
//
// A Connection (HTTP/1.1) that sees the preface, or ALPN "h2", hands its socket and the bytes
// it already read over to this class (Worker::hand_over). Lifetime rules are the same as
// Connection's: the worker owns it; it deletes itself when closed and nothing is pending.
//
// Bounded buffering: at most one write chunk (write_chunk bytes) is produced before the
// previous one has left; nghttp2 produces DATA only inside the client's flow-control windows;
// at most --h2-max-streams streams are served at once; and while a write is stuck with frames
// queued behind it, reading stops - so a client that never reads costs a bounded amount.
#include "core/server/h2_session.hpp"
#include "core/server/streams.hpp"
#include "core/server/worker.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>

#include <map>
#include <memory>

namespace loadbench::server {

template <class Stream>
class Http2Connection final : public ConnectionBase {
public:
    static constexpr std::size_t read_buffer_size = 16 * 1024;
    static constexpr std::size_t write_chunk = 64 * 1024;
    static constexpr auto linger_time = std::chrono::seconds(1);

    // `already` = bytes the HTTP/1.1 connection read before it knew (the preface, maybe more).
    Http2Connection(Worker& worker, Stream&& stream, const char* already, std::size_t size)
        : ConnectionBase(worker), stream_(std::move(stream)), session_(worker.context()),
          in_(new char[read_buffer_size]), delay_timer_(worker.io()), early_(already, size) {
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

    void expire() override {
        close();
        finish_handler();
    }

    void begin_shutdown() override {
        if (!closed_ && !lingering_) {
            session_.shutdown();  // GOAWAY: no new streams, the open ones finish
            pump();
        }
        finish_handler();
    }

private:
    using error_code = boost::system::error_code;
    using clock = ConnectionBase::clock;

    // After every event: write what the session has, arm /delay timers, keep a read going,
    // set the deadline - or close once the session is done and everything was written.
    void pump() {
        if (closed_ || lingering_) return;
        if (!writing_) {
            out_.clear();
            if (!fatal_ && !session_.send(out_, write_chunk)) fatal_ = true;
            if (!out_.empty()) write_out();
            if (closed_) return;
        }
        arm_delays();
        if (!writing_ && (fatal_ || session_.finished())) return graceful_close();
        // Backpressure: while the client does not take our writes and frames pile up, stop
        // reading its requests (on_write resumes); TCP then holds the client back.
        if (!reading_ && !fatal_ && session_.want_read() && !(writing_ && session_.backlogged())) start_read();
        update_deadline();
    }

    void update_deadline() {
        if (session_.streams_awaiting_headers() > 0) {
            deadline_ = session_.headers_since() + std::chrono::milliseconds(worker_.config().header_timeout_ms);
        } else if (session_.delayed_streams() > 0 && !writing_) {
            deadline_ = no_deadline;  // the server, not the client, is what we wait for
        } else {
            // Idle connection, a body that must keep moving, or a write the client must take.
            deadline_ = worker_.now() + std::chrono::milliseconds(worker_.config().idle_timeout_ms);
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
                if constexpr (Stream::is_tls) {
                    finish_closing();  // the read was cancelled for the TLS shutdown
                } else if (ec) {
                    close();  // the client closed too (or reset): done
                } else {
                    start_read();  // discard
                }
            } else if (ec) {
                close();  // the client went away (or reset): nothing left to answer to
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
    void write_out() {
        for (;;) {
            std::size_t already_sent = 0;
            if constexpr (!Stream::is_tls) {
                // Plain TCP: try the send right here (as Connection does); it usually takes all.
                error_code ec;
                already_sent = stream_.tcp().write_some(boost::asio::buffer(out_), ec);
                if (ec && ec != boost::asio::error::would_block && ec != boost::asio::error::try_again) {
                    close();
                    return;
                }
                if (!ec && already_sent == out_.size()) {
                    // More may be ready (a body larger than one chunk): go round again.
                    out_.clear();
                    if (fatal_ || !session_.want_write()) return;
                    if (!session_.send(out_, write_chunk)) fatal_ = true;
                    if (out_.empty()) return;
                    continue;
                }
            }
            writing_ = true;
            deadline_ = worker_.now() + std::chrono::milliseconds(worker_.config().idle_timeout_ms);
            stream_.async_write(boost::asio::buffer(out_.data() + already_sent, out_.size() - already_sent),
                                [this](error_code ec, std::size_t) { on_write(ec); });
            return;
        }
    }

    void on_write(error_code ec) {
        writing_ = false;
        if (!closed_) {
            if (ec) {
                close();
            } else {
                out_.clear();
                pump();
            }
        }
        finish_handler();
    }

    // --- closing -----------------------------------------------------------------------
    // Everything was written (the last frame is a GOAWAY or the answer to the last stream):
    // send our FIN / close_notify, then drain the client's bytes until it closes (bounded by
    // linger_time), so unread input does not turn our last frames into a reset.
    void graceful_close() {
        lingering_ = true;
        deadline_ = worker_.now() + linger_time;
        if constexpr (Stream::is_tls) {
            if (reading_) {
                error_code ignored;
                stream_.tcp().cancel(ignored);  // on_read continues with the TLS shutdown
            } else {
                finish_closing();
            }
        } else {
            error_code ignored;
            stream_.tcp().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
            if (!reading_) start_read();
        }
    }

    // Lingering: plain TCP reads and discards; TLS sends close_notify (once).
    void finish_closing() {
        if constexpr (Stream::is_tls) {
            if (tls_shutdown_started_ || closed_) return;
            tls_shutdown_started_ = true;
            pending_ += 1;
            stream_.tls().async_shutdown([this](error_code) {
                pending_ -= 1;
                if (!closed_) close();
                finish_handler();
            });
        } else {
            start_read();
        }
    }

    void close() {
        if (closed_) return;
        closed_ = true;
        error_code ignored;
        stream_.tcp().close(ignored);  // pending operations complete with operation_aborted
        delay_timer_.cancel();
    }

    void finish_handler() {
        if (closed_ && !reading_ && !writing_ && pending_ == 0) worker_.destroy(this);
    }

    Stream stream_;
    Http2Session session_;
    std::unique_ptr<char[]> in_;
    std::string out_;
    boost::asio::steady_timer delay_timer_;
    std::multimap<clock::time_point, std::int32_t> delays_;  // due time -> stream
    clock::time_point armed_for_{};
    std::string early_;
    int pending_ = 0;  // delay timer wait, TLS shutdown
    bool timer_pending_ = false;
    bool reading_ = false;
    bool writing_ = false;
    bool closed_ = false;
    bool lingering_ = false;
    bool fatal_ = false;
    bool tls_shutdown_started_ = false;
};

}  // namespace loadbench::server
