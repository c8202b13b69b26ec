#pragma once
// One client connection: read, parse, answer, repeat - a small state machine per socket.
//
// Why it looks the way it does (each point is measured user-space cost on the request path):
//  - one read buffer and one output buffer per connection, allocated once;
//  - a field-less parser (RequestParser) re-emplaced per request into reused storage;
//  - the constant responses are pre-serialised bytes (ResponseCache), copied into the
//    output buffer, never built per request;
//  - every request already buffered (pipelining) is answered before the next read, and all
//    their responses leave in one write;
//  - no timer per operation: the worker's tick enforces `deadline_`;
//  - the worker owns the connection (intrusive list); handlers capture a raw `this`, and the
//    connection deletes itself only when no operation is pending.
#include "core/server/request_parser.hpp"
#include "core/server/routes.hpp"
#include "core/server/streams.hpp"
#include "core/server/worker.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http/error.hpp>

#include <cstring>
#include <memory>
#include <optional>

namespace loadbench::server {

template <class Stream>
class Connection final : public ConnectionBase {
public:
    static constexpr std::size_t read_buffer_size = 16 * 1024;  // > the 8 KiB header limit
    static constexpr auto linger_time = std::chrono::seconds(1);

    Connection(Worker& worker, boost::asio::ip::tcp::socket socket, boost::asio::ssl::context* tls)
        : ConnectionBase(worker), stream_(std::move(socket), tls), in_(new char[read_buffer_size]) {
        out_.reserve(4096);
    }

    void start() override {
        if constexpr (Stream::is_tls) {
            deadline_ = worker_.now() + header_timeout();
            pending_ += 1;
            stream_.tls().async_handshake(boost::asio::ssl::stream_base::server,
                                          [this](boost::beast::error_code ec) {
                                              pending_ -= 1;
                                              if (!closed_ && ec) close();
                                              if (!closed_) read_more();
                                              finish_handler();
                                          });
        } else {
            read_more();
        }
    }

    void expire() override {
        close();
        finish_handler();
    }

    void begin_shutdown() override {
        // Idle = waiting for the first byte of a next request; anything else is in flight.
        if (reading_ && !parser_ && in_begin_ == in_end_ && !lingering_) close();
        finish_handler();
    }

private:
    using error_code = boost::beast::error_code;

    std::chrono::milliseconds header_timeout() const {
        return std::chrono::milliseconds(worker_.config().header_timeout_ms);
    }
    std::chrono::milliseconds idle_timeout() const {
        return std::chrono::milliseconds(worker_.config().idle_timeout_ms);
    }

    // --- reading -----------------------------------------------------------------------
    void read_more() {
        if (in_begin_ == in_end_) {
            in_begin_ = in_end_ = 0;
        } else if (in_begin_ > 0) {
            std::memmove(in_.get(), in_.get() + in_begin_, in_end_ - in_begin_);
            in_end_ -= in_begin_;
            in_begin_ = 0;
        }
        if (!parser_) {
            if (worker_.stopping()) return graceful_close();
            deadline_ = worker_.now() + idle_timeout();
        } else if (!parser_->is_header_done()) {
            deadline_ = request_started_ + header_timeout();  // slowloris: not reset per byte
        } else {
            deadline_ = worker_.now() + idle_timeout();  // body: must keep moving
        }
        reading_ = true;
        stream_.async_read_some(boost::asio::buffer(in_.get() + in_end_, read_buffer_size - in_end_),
                                [this](error_code ec, std::size_t n) { on_read(ec, n); });
    }

    void on_read(error_code ec, std::size_t n) {
        reading_ = false;
        if (!closed_) {
            if (ec) {
                close();
            } else if (lingering_) {
                read_more_discarding();
            } else {
                in_end_ += n;
                process();
            }
        }
        finish_handler();
    }

    // Parses and answers every complete request in the buffer, then writes or reads.
    void process() {
        while (in_begin_ < in_end_ && !awaiting_delay_ && !close_after_write_) {
            if (!parser_) {
                parser_.emplace(scratch_, worker_.config().max_body_bytes,
                                static_cast<std::uint32_t>(worker_.config().max_header_bytes));
                request_started_ = worker_.now();
                continue_sent_ = false;
            }
            error_code ec;
            const std::size_t used =
                parser_->put(boost::asio::const_buffer(in_.get() + in_begin_, in_end_ - in_begin_), ec);
            in_begin_ += used;
            if (ec == boost::beast::http::error::need_more) {
                maybe_send_continue();
                break;
            }
            if (ec) {
                answer_parse_error(ec);
                break;
            }
            if (parser_->is_done()) {
                answer_request();
            } else {
                maybe_send_continue();
                if (used == 0) break;
            }
        }
        if (!out_.empty()) return write_out();
        if (awaiting_delay_) return start_delay_timer();
        read_more();
    }

    // curl and others wait for "100 Continue" before sending a body they announced.
    void maybe_send_continue() {
        if (parser_ && parser_->is_header_done() && !parser_->is_done() && parser_->expects_continue() &&
            !continue_sent_) {
            continue_sent_ = true;
            out_ += "HTTP/1.1 100 Continue\r\n\r\n";
        }
    }

    // --- answering ---------------------------------------------------------------------
    ConnectionHeader connection_header(bool keep_alive) const {
        if (!keep_alive) return ConnectionHeader::close;
        return parser_->version() < 11 ? ConnectionHeader::keep_alive : ConnectionHeader::none;
    }

    void answer_request() {
        const bool keep_alive = parser_->keep_alive() && !worker_.stopping();
        const ConnectionHeader ch = connection_header(keep_alive);
        const RouteMatch match = match_route(parser_->method(), scratch_.target);
        auto& counters = worker_.counters_mut();
        switch (match.route) {
            case Route::plaintext:
                out_ += worker_.responses().plaintext(ch);
                counters.request(RequestKind::plaintext);
                break;
            case Route::json:
                out_ += worker_.responses().json(ch);
                counters.request(RequestKind::json);
                break;
            case Route::echo: {
                const std::string_view type =
                    scratch_.content_type.empty() ? std::string_view("application/octet-stream")
                                                  : std::string_view(scratch_.content_type);
                append_response(out_, {200, worker_.date(), type, ch, {}}, scratch_.body);
                counters.request(RequestKind::echo);
                break;
            }
            case Route::delay:
                awaiting_delay_ = true;
                delay_ms_ = match.delay_ms;
                delay_connection_header_ = ch;
                break;
            case Route::not_found:
                append_response(out_, {404, worker_.date(), "text/plain", ch, {}}, "Not Found\n");
                counters.request(RequestKind::not_found);
                break;
            case Route::method_not_allowed:
                append_response(out_,
                                {405, worker_.date(), "text/plain", ch,
                                 match.allowed_method == "POST" ? "Allow: POST\r\n" : "Allow: GET\r\n"},
                                "Method Not Allowed\n");
                counters.request(RequestKind::method_not_allowed);
                break;
            case Route::bad_request:
                append_response(out_, {400, worker_.date(), "text/plain", ch, {}}, "Bad Request\n");
                counters.request(RequestKind::bad_request);
                break;
        }
        parser_.reset();
        if (!keep_alive) stop_reading_after_this();
    }

    void answer_parse_error(const error_code& ec) {
        namespace http = boost::beast::http;
        unsigned status = 400;
        RequestKind kind = RequestKind::bad_request;
        std::string_view body = "Bad Request\n";
        if (ec == http::error::header_limit) {
            status = 431;
            kind = RequestKind::header_too_large;
            body = "Request Header Fields Too Large\n";
        } else if (ec == http::error::body_limit) {
            status = 413;
            kind = RequestKind::body_too_large;
            body = "Payload Too Large\n";
        }
        append_response(out_, {status, worker_.date(), "text/plain", ConnectionHeader::close, {}}, body);
        worker_.counters_mut().request(kind);
        parser_.reset();
        stop_reading_after_this();
    }

    // The response being built is the last on this connection; unread input is dropped.
    void stop_reading_after_this() {
        close_after_write_ = true;
        in_begin_ = in_end_ = 0;
    }

    // --- /delay ------------------------------------------------------------------------
    void start_delay_timer() {
        if (!delay_timer_) delay_timer_.emplace(worker_.io());
        deadline_ = no_deadline;  // the server, not the client, is what we wait for
        pending_ += 1;
        delay_timer_->expires_after(std::chrono::milliseconds(delay_ms_));
        delay_timer_->async_wait([this](error_code ec) {
            pending_ -= 1;
            if (!closed_) {
                if (ec) {
                    close();
                } else {
                    awaiting_delay_ = false;
                    const bool keep_alive = delay_connection_header_ != ConnectionHeader::close;
                    append_response(out_, {200, worker_.date(), "text/plain", delay_connection_header_, {}},
                                    plaintext_body);
                    worker_.counters_mut().request(RequestKind::delay);
                    if (!keep_alive) stop_reading_after_this();
                    process();
                }
            }
            finish_handler();
        });
    }

    // --- writing -----------------------------------------------------------------------
    void write_out() {
        deadline_ = worker_.now() + idle_timeout();  // a client that stops reading is dropped
        writing_ = true;
        stream_.async_write(boost::asio::buffer(out_), [this](error_code ec, std::size_t) { on_write(ec); });
    }

    void on_write(error_code ec) {
        writing_ = false;
        if (!closed_) {
            out_.clear();
            if (ec) {
                close();
            } else if (close_after_write_) {
                graceful_close();
            } else if (awaiting_delay_) {
                start_delay_timer();
            } else {
                process();
            }
        }
        finish_handler();
    }

    // --- closing -----------------------------------------------------------------------
    // Send our FIN, then read and discard until the client closes (bounded by linger_time),
    // so a last response is not destroyed by a reset caused by unread input.
    void graceful_close() {
        if constexpr (Stream::is_tls) {
            deadline_ = worker_.now() + linger_time;
            pending_ += 1;
            stream_.tls().async_shutdown([this](error_code) {
                pending_ -= 1;
                if (!closed_) close();
                finish_handler();
            });
        } else {
            error_code ignored;
            stream_.tcp().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
            lingering_ = true;
            deadline_ = worker_.now() + linger_time;
            read_more_discarding();
        }
    }

    void read_more_discarding() {
        reading_ = true;
        stream_.async_read_some(boost::asio::buffer(in_.get(), read_buffer_size),
                                [this](error_code ec, std::size_t n) { on_read(ec, n); });
    }

    void close() {
        if (closed_) return;
        closed_ = true;
        error_code ignored;
        stream_.tcp().close(ignored);  // pending operations complete with operation_aborted
        if (delay_timer_) delay_timer_->cancel();
    }

    // Called last in every handler: the connection is deleted once closed and idle.
    void finish_handler() {
        if (closed_ && !reading_ && !writing_ && pending_ == 0) worker_.destroy(this);
    }

    Stream stream_;
    std::unique_ptr<char[]> in_;
    std::size_t in_begin_ = 0;
    std::size_t in_end_ = 0;
    std::string out_;
    RequestScratch scratch_;
    std::optional<RequestParser> parser_;
    std::optional<boost::asio::steady_timer> delay_timer_;
    clock::time_point request_started_{};
    std::uint32_t delay_ms_ = 0;
    ConnectionHeader delay_connection_header_ = ConnectionHeader::none;
    int pending_ = 0;  // handshake, delay timer, TLS shutdown
    bool reading_ = false;
    bool writing_ = false;
    bool closed_ = false;
    bool lingering_ = false;
    bool awaiting_delay_ = false;
    bool close_after_write_ = false;
    bool continue_sent_ = false;
};

}  // namespace loadbench::server
