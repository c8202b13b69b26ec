#pragma once
// One client connection: read, parse, answer, repeat - a small state machine per socket.
//
// Why it looks the way it does (each point is measured user-space cost on the request path):
//  - an idle plain-TCP connection holds no buffer (C10k memory, as nginx): the read buffer is
//    taken from the worker's free list only when the socket has bytes, the output buffer
//    only when there is a response to write, and both go back when the connection waits for
//    a next request with nothing pending (buffer_pool.hpp; a free list, so keep-alive under
//    load allocates nothing per request). TLS connections keep their read buffer (Asio's
//    SSL stream buffers are far larger anyway, and the read is in flight while idle);
//  - parsing and answering live in RequestProcessor (no I/O, so it can be fuzzed): a
//    field-less parser (RequestParser) re-emplaced per request into reused storage;
//  - the constant responses are pre-serialised bytes (ResponseCache), copied into the
//    output buffer, never built per request;
//  - every request already buffered (pipelining) is answered before the next read, and all
//    their responses leave in one write;
//  - no timer per operation: the worker's tick enforces `deadline_`;
//  - the worker owns the connection (intrusive list); handlers capture a raw `this`, and the
//    connection deletes itself only when no operation is pending.
// Writing, closing, lingering and the TLS shutdown are ConnectionLifecycle's (shared with
// HTTP/2; reached as this->write(), this->close(), ...); the state they share is
// ConnectionBase's. This file keeps HTTP/1.1: the handshake, ALPN and the h2 preface,
// reading, answering, and when to close.
#include "core/server/worker/connection_base.hpp"
#include "core/server/worker/connection_lifecycle.hpp"
#include "core/server/h2/h2_connection.hpp"
#include "core/server/h1/request_processor.hpp"
#include "core/server/net/streams.hpp"
#include "core/server/worker/worker.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace loadbench::server {

template <class Stream>
class Connection final : public ConnectionBase, private ConnectionLifecycle<Connection<Stream>, Stream> {
    using Lifecycle = ConnectionLifecycle<Connection<Stream>, Stream>;

public:
    static constexpr std::size_t read_buffer_size = RequestProcessor::max_buffered_bytes;
    static_assert(read_buffer_size == Worker::read_buffer_size, "the worker lends buffers of this size");

    Connection(Worker& worker, ServerSocket socket, boost::asio::ssl::context* tls)
        : ConnectionBase(worker), stream_(std::move(socket), tls), edge_read_(*this) {
        protocol_known_ = !worker.config().h2;
    }

    ~Connection() override {
        release_input();
        worker_.output_buffers().give(out_);
    }

    void start() override {
        if constexpr (Stream::is_tls) {
            deadline_ = worker_.now() + header_timeout();
            pending_ += 1;
            stream_.tls().async_handshake(boost::asio::ssl::stream_base::server, [this](boost::beast::error_code ec) {
                pending_ -= 1;
                if (!closed_ && ec) this->close();
                if (!closed_) after_handshake();
                finish_handler();
            });
        } else {
            // A connection just accepted may not have its request yet, and a recv then
            // returns EAGAIN. Like nginx, wait for the socket's first edge instead: the
            // epoll_wait that reports it is shared with every other ready socket, and no recv
            // is wasted (reports/server-baseline.md: recvfrom 1.00 per new connection).
            read_more(/*speculative=*/false);
        }
    }

    void begin_shutdown() override {
        // Idle = waiting for the first byte of a next request; anything else is in flight.
        if (reading_ && !requests_.in_request() && in_begin_ == in_end_ && !lingering_) this->close();
        finish_handler();
    }

    void expire() override {
        this->close();
        finish_handler();
    }

private:
    friend Lifecycle;

    // --- buffers -----------------------------------------------------------------------
    void take_input() {
        if (!in_) in_ = worker_.read_buffers().take();
    }
    void release_input() {
        worker_.read_buffers().give(in_);
        in_ = nullptr;
        in_begin_ = in_end_ = 0;
    }
    // Waiting for a next request with nothing buffered or to send: give both buffers back.
    void go_idle() {
        if constexpr (!Stream::is_tls && LOADBENCH_EDGE_READ) release_input();
        if (out_.capacity() != 0) worker_.output_buffers().give(out_);
    }
    void take_output() {
        if (out_.capacity() < 256) out_ = worker_.output_buffers().take();
    }

#if LOADBENCH_EDGE_READ
    // For EdgeRead::perform: the free space to read into, taking a buffer first if needed.
    std::pair<char*, std::size_t> read_buffer() {
        take_input();
        return {in_ + in_end_, read_buffer_size - in_end_};
    }
    // The recv found nothing: an idle connection gives its buffer back until bytes arrive.
    void read_would_block() {
        if (in_begin_ == in_end_) release_input();
    }
#endif

    // --- reading -----------------------------------------------------------------------
    void read_more(bool speculative = true) {
        if (in_begin_ == in_end_) {
            in_begin_ = in_end_ = 0;
            if (out_.empty()) go_idle();
        } else if (in_begin_ > 0) {
            std::memmove(in_, in_ + in_begin_, in_end_ - in_begin_);
            in_end_ -= in_begin_;
            in_begin_ = 0;
        }
        if (!requests_.in_request()) {
            if (worker_.stopping()) return graceful_close();
            deadline_ = worker_.now() + idle_timeout();
        } else if (!requests_.header_done()) {
            deadline_ = requests_.request_started() + header_timeout();  // slowloris: not reset per byte
        } else {
            deadline_ = worker_.now() + idle_timeout();  // body: must keep moving
        }
        start_read(speculative);
    }

    // Reads into the buffer after in_end_ (lingering reads too: their bytes are discarded).
    // `speculative`: try the recv at once (else wait for readiness; plain TCP only).
    void start_read([[maybe_unused]] bool speculative = true) {
        reading_ = true;
        read_asked_ = read_buffer_size - in_end_;
        if constexpr (Stream::is_tls || !LOADBENCH_EDGE_READ) {
            take_input();
            stream_.async_read_some(boost::asio::buffer(in_ + in_end_, read_asked_),
                                    [this](error_code ec, std::size_t n) { on_read(ec, n); });
        } else {
#if LOADBENCH_EDGE_READ
            // The buffer is taken when bytes are there.
            edge_read_.start(worker_.reactor(), stream_.tcp(), speculative);
#endif
        }
    }

    // Where reads are plain async_read_some (TLS, or no EdgeRead in this Boost): nothing.
    struct NoEdgeRead {
        explicit NoEdgeRead(Connection&) {}
    };
#if LOADBENCH_EDGE_READ
    // Completion of the plain-TCP EdgeRead operation.
    void on_edge_read(error_code ec, std::size_t n) { on_read(ec, n); }
    friend class EdgeRead<Connection>;
    using PlainRead = EdgeRead<Connection>;
#else
    using PlainRead = NoEdgeRead;
#endif

    void on_read(error_code ec, std::size_t n) {
        reading_ = false;
        if (!closed_) {
            if (lingering_) {
                this->lingering_read_done(ec);
            } else if (ec) {
                this->close();
            } else {
                in_end_ += n;
                last_read_drained_ = n < read_asked_;  // a short read: the socket was empty
                process();
            }
        }
        finish_handler();
    }

    // ALPN picked the protocol: h2 goes on in an Http2Connection, anything else is HTTP/1.1.
    void after_handshake() {
        if constexpr (Stream::is_tls) {
            if (!protocol_known_) {
                const unsigned char* proto = nullptr;
                unsigned length = 0;
                SSL_get0_alpn_selected(stream_.tls().native_handle(), &proto, &length);
                if (length == 2 && std::memcmp(proto, "h2", 2) == 0) return hand_over_to_h2();
                // No ALPN at all: a client may still speak h2 with prior knowledge (sniffed below).
                protocol_known_ = length != 0;
            }
        }
        read_more();
    }

    // A connection that begins with the HTTP/2 client preface is h2 (prior knowledge); any
    // other first bytes are HTTP/1.1. Decided once, on the first bytes read.
    enum class Sniff { need_more, http1, http2 };
    Sniff sniff() const {
        const std::size_t available = in_end_ - in_begin_;
        const std::size_t n = std::min(available, http2_preface.size());
        if (available == 0) return Sniff::need_more;
        if (std::memcmp(in_ + in_begin_, http2_preface.data(), n) != 0) return Sniff::http1;
        return n == http2_preface.size() ? Sniff::http2 : Sniff::need_more;
    }

    void hand_over_to_h2() {
        auto* next = new Http2Connection<Stream>(worker_, std::move(stream_), in_ ? in_ + in_begin_ : nullptr,
                                                 in_end_ - in_begin_);
        worker_.hand_over(this, next);
        closed_ = true;  // this object is done (its socket moved); finish_handler deletes it
        next->start();
    }

    // Answers every complete request in the buffer (RequestProcessor), then writes or reads.
    void process() {
        if (!protocol_known_) [[unlikely]] {
            switch (sniff()) {
                case Sniff::need_more:
                    if (in_end_ > in_begin_) return read_more();
                    break;  // nothing read yet (e.g. after a write): carry on as HTTP/1.1 would
                case Sniff::http2:
                    return hand_over_to_h2();
                case Sniff::http1:
                    protocol_known_ = true;
                    break;
            }
        }
        if (in_end_ > in_begin_) {
            take_output();
            in_begin_ += requests_.process(worker_.context(), in_ + in_begin_, in_end_ - in_begin_, out_);
        }
        if (requests_.close_after_write()) drop_unread_input();
        if (!out_.empty()) return write_out();
        if (requests_.awaiting_delay()) return start_delay_timer();
        read_more();
    }

    // --- /delay ------------------------------------------------------------------------
    void start_delay_timer() {
        if (!delay_timer_) delay_timer_ = std::make_unique<boost::asio::steady_timer>(worker_.io());
        deadline_ = no_deadline;  // the server, not the client, is what we wait for
        pending_ += 1;
        delay_timer_->expires_after(std::chrono::milliseconds(requests_.delay_ms()));
        delay_timer_->async_wait([this](error_code ec) {
            pending_ -= 1;
            if (!closed_) {
                if (ec) {
                    this->close();
                } else {
                    take_output();
                    requests_.finish_delay(worker_.context(), out_);
                    if (requests_.close_after_write()) drop_unread_input();
                    process();
                }
            }
            finish_handler();
        });
    }

    // --- writing -----------------------------------------------------------------------
    void write_out() {
        // The last response before our FIN goes with MSG_MORE: its tail waits in the kernel
        // for the FIN that follows at once (close, or the lingering shutdown), and leaves in
        // the same segment - one packet fewer per closed connection, the same bytes and FIN
        // for the client. (A partial send continues without it.)
        const int flags = requests_.close_after_write() ? MSG_MORE : 0;
        if (this->write(out_, flags)) after_write();
    }

    // The async rest of write_out() has left.
    void on_written() { after_write(); }

    void after_write() {
        out_.clear();
        if (requests_.close_after_write()) {
            graceful_close();
        } else if (requests_.awaiting_delay()) {
            start_delay_timer();
        } else {
            process();
        }
    }

    // --- closing -----------------------------------------------------------------------
    // The last response is written and anything still buffered will not be answered.
    void drop_unread_input() {
        unread_input_ = unread_input_ || in_end_ > in_begin_;
        in_begin_ = in_end_ = 0;
    }

    // The last response has left: close, lingering (ConnectionLifecycle::linger_close) so
    // that a reset caused by unread input does not destroy it.
    void graceful_close() {
        if constexpr (!Stream::is_tls) {
            // Like nginx: no lingering close when a complete request asked for the close and
            // nothing is left unread (all buffered input consumed, the last read drained the
            // socket). Then close() sends a FIN, no reset, and the shutdown, the wait for the
            // client's FIN and its read (three system calls and a reactor round trip per
            // connection) are saved. Anything else (an error answer, a pipelined request
            // after the close) still lingers so the last response is not lost to a reset.
            if (requests_.closes_after_complete_request() && !unread_input_ && last_read_drained_) {
                this->close();
                return;
            }
        }
        this->linger_close();
    }

    // Lingering (plain TCP): read again, discarding what was read.
    void read_discarding() {
        in_begin_ = in_end_ = 0;
        start_read();
    }

    void on_close() {
        if (delay_timer_) delay_timer_->cancel();
    }

    // The flags first: they fill ConnectionBase's tail padding (C10k memory).
    bool unread_input_ = false;       // input dropped unanswered at the close (drop_unread_input)
    bool last_read_drained_ = false;  // the last read returned fewer bytes than asked for
    bool protocol_known_ = true;      // false until the first bytes (or ALPN) said HTTP/1.1 or h2
    Stream stream_;                   // ConnectionLifecycle writes and closes through it too
    // Plain TCP reads go through a preallocated reactor operation (see edge_read.hpp).
    [[no_unique_address]] std::conditional_t<Stream::is_tls, NoEdgeRead, PlainRead> edge_read_;
    char* in_ = nullptr;  // from worker_.read_buffers(), read_buffer_size bytes; null while idle
    std::size_t in_begin_ = 0;
    std::size_t in_end_ = 0;
    std::string out_;  // from worker_.output_buffers() while a response is built or written
    RequestProcessor requests_;
    std::unique_ptr<boost::asio::steady_timer> delay_timer_;  // only /delay needs one: not inline
    std::size_t read_asked_ = 0;
};

}  // namespace loadbench::server
