#pragma once
// The parse-and-answer half of a server connection, with no socket in it.
//
// A Connection reads bytes and hands them here; this turns every complete request in them
// into response bytes appended to the connection's output buffer, in order (pipelining),
// and says what the connection must do next (read more, wait for a /delay timer, or close
// after writing). Keeping it free of I/O is what lets a fuzzer feed it arbitrary bytes
// through exactly the path a real session takes (cpp/tests/fuzz/server_request_fuzz.cpp).
#include "core/server/h1/http1_state.hpp"
#include "core/server/h1/request_parser.hpp"
#include "core/server/h1/responses.hpp"
#include "core/server/app/answer.hpp"
#include "core/server/app/handler_context.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace loadbench::server {

class RequestProcessor {
public:
    using clock = std::chrono::steady_clock;
    // The most unparsed input a connection buffers (> the 8 KiB header limit). A request
    // element that does not fit - e.g. a chunk-size line with an endless extension, which
    // Beast's parser does not limit - is answered 400 instead of waiting forever for a
    // line end the buffer has no room for.
    static constexpr std::size_t max_buffered_bytes = 16 * 1024;

    // Parses and answers the requests in [data, data + size), appending responses to `out`.
    // Returns how many bytes were consumed; the rest (less than max_buffered_bytes, part of
    // one request) must be presented again, followed by new bytes, on the next call. Stops early while a /delay
    // request waits for its timer or once the connection must close after `out` is written.
    std::size_t process(HandlerContext& ctx, const char* data, std::size_t size, std::string& out);

    // The /delay timer fired: appends its response. Call process() again for what follows.
    void finish_delay(HandlerContext& ctx, std::string& out);

    bool awaiting_delay() const { return awaiting_delay_; }
    std::uint32_t delay_ms() const { return delay_ms_; }
    // The response in `out` is the last on this connection; unread input is to be dropped.
    bool close_after_write() const { return close_after_write_; }
    // ... because a complete request asked for it (Connection: close, HTTP/1.0), not because
    // of an error that may have left part of a request unread.
    bool closes_after_complete_request() const { return close_after_write_ && !error_close_; }
    // A request has begun (some of it is parsed) and is not answered yet.
    bool in_request() const { return state_ != nullptr; }
    bool header_done() const { return state_ && state_->parser->is_header_done(); }
    // When the request in progress began (the worker's coarse clock): the header deadline.
    clock::time_point request_started() const { return request_started_; }

private:
    void maybe_send_continue(std::string& out);
    ConnectionHeader connection_header(bool keep_alive) const;
    void answer_request(HandlerContext& ctx, std::string& out);
    // `head_only`: the answer to a HEAD request - the head a GET gets (its Content-Length
    // included) without the content (RFC 9110 §9.3.2).
    void encode(HandlerContext& ctx, const Answer& answer, ConnectionHeader ch, bool head_only, std::string& out);
    void answer_parse_error(HandlerContext& ctx, const boost::beast::error_code& ec, std::string& out);
    void answer_bad_request(HandlerContext& ctx, std::string& out);
    void end_request(HandlerContext& ctx) { http1_state(ctx).request_states.give(state_); }

    // The request in progress (from the worker's Http1State::request_states), null between requests.
    std::unique_ptr<RequestState> state_;
    clock::time_point request_started_{};
    std::uint32_t delay_ms_ = 0;
    ConnectionHeader delay_connection_header_ = ConnectionHeader::none;
    bool delay_head_only_ = false;
    bool awaiting_delay_ = false;
    bool close_after_write_ = false;
    bool error_close_ = false;
    bool continue_sent_ = false;
};

}  // namespace loadbench::server
