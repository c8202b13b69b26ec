#include "core/server/request_processor.hpp"

#include "core/server/routes.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

namespace loadbench::server {

std::size_t RequestProcessor::process(Worker& worker, const char* data, std::size_t size, std::string& out) {
    std::size_t consumed = 0;
    while (consumed < size && !awaiting_delay_ && !close_after_write_) {
        if (!parser_) {
            parser_.emplace(scratch_, worker.config().max_body_bytes,
                            static_cast<std::uint32_t>(worker.config().max_header_bytes));
            request_started_ = worker.now();
            continue_sent_ = false;
        }
        boost::beast::error_code ec;
        const std::size_t used = parser_->put(boost::asio::const_buffer(data + consumed, size - consumed), ec);
        consumed += used;
        if (ec == boost::beast::http::error::need_more) {
            maybe_send_continue(out);
            break;
        }
        if (ec) {
            answer_parse_error(worker, ec, out);
            break;
        }
        if (parser_->is_done()) {
            answer_request(worker, out);
        } else {
            maybe_send_continue(out);
            if (used == 0) break;
        }
    }
    if (size - consumed >= max_buffered_bytes && !awaiting_delay_ && !close_after_write_) {
        answer_bad_request(worker, out);  // no progress possible: the buffer is full
    }
    return consumed;
}

// curl and others wait for "100 Continue" before sending a body they announced.
void RequestProcessor::maybe_send_continue(std::string& out) {
    if (parser_ && parser_->is_header_done() && !parser_->is_done() && parser_->expects_continue() &&
        !continue_sent_) {
        continue_sent_ = true;
        out += "HTTP/1.1 100 Continue\r\n\r\n";
    }
}

ConnectionHeader RequestProcessor::connection_header(bool keep_alive) const {
    if (!keep_alive) return ConnectionHeader::close;
    return parser_->version() < 11 ? ConnectionHeader::keep_alive : ConnectionHeader::none;
}

void RequestProcessor::answer_request(Worker& worker, std::string& out) {
    const bool keep_alive = parser_->keep_alive() && !worker.stopping();
    const ConnectionHeader ch = connection_header(keep_alive);
    const RouteMatch match = match_route(parser_->method(), scratch_.target);
    auto& counters = worker.counters_mut();
    switch (match.route) {
        case Route::plaintext:
            out += worker.responses().plaintext(ch);
            counters.request(RequestKind::plaintext);
            break;
        case Route::json:
            out += worker.responses().json(ch);
            counters.request(RequestKind::json);
            break;
        case Route::echo: {
            const std::string_view type = scratch_.content_type.empty()
                                              ? std::string_view("application/octet-stream")
                                              : std::string_view(scratch_.content_type);
            append_response(out, {200, worker.date(), type, ch, {}}, scratch_.body);
            counters.request(RequestKind::echo);
            break;
        }
        case Route::delay:
            awaiting_delay_ = true;
            delay_ms_ = match.delay_ms;
            delay_connection_header_ = ch;
            break;
        case Route::not_found:
            append_response(out, {404, worker.date(), "text/plain", ch, {}}, "Not Found\n");
            counters.request(RequestKind::not_found);
            break;
        case Route::method_not_allowed:
            append_response(out,
                            {405, worker.date(), "text/plain", ch,
                             match.allowed_method == "POST" ? "Allow: POST\r\n" : "Allow: GET\r\n"},
                            "Method Not Allowed\n");
            counters.request(RequestKind::method_not_allowed);
            break;
        case Route::bad_request:
            append_response(out, {400, worker.date(), "text/plain", ch, {}}, "Bad Request\n");
            counters.request(RequestKind::bad_request);
            break;
    }
    parser_.reset();
    if (!keep_alive) close_after_write_ = true;
}

void RequestProcessor::answer_parse_error(Worker& worker, const boost::beast::error_code& ec, std::string& out) {
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
    append_response(out, {status, worker.date(), "text/plain", ConnectionHeader::close, {}}, body);
    worker.counters_mut().request(kind);
    parser_.reset();
    close_after_write_ = true;
}

void RequestProcessor::answer_bad_request(Worker& worker, std::string& out) {
    append_response(out, {400, worker.date(), "text/plain", ConnectionHeader::close, {}}, "Bad Request\n");
    worker.counters_mut().request(RequestKind::bad_request);
    parser_.reset();
    close_after_write_ = true;
}

void RequestProcessor::finish_delay(Worker& worker, std::string& out) {
    awaiting_delay_ = false;
    append_response(out, {200, worker.date(), "text/plain", delay_connection_header_, {}}, plaintext_body);
    worker.counters_mut().request(RequestKind::delay);
    if (delay_connection_header_ == ConnectionHeader::close) close_after_write_ = true;
}

}  // namespace loadbench::server
