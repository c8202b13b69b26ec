#include "core/server/h1/request_processor.hpp"

#include "core/server/app/answer.hpp"
#include "core/server/app/routes.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

namespace loadbench::server {

std::size_t RequestProcessor::process(HandlerContext& ctx, const char* data, std::size_t size, std::string& out) {
    std::size_t consumed = 0;
    while (consumed < size && !awaiting_delay_ && !close_after_write_) {
        if (!state_) {
            state_ = http1_state(ctx).request_states.take();
            state_->parser.emplace(state_->scratch, ctx.config.max_body_bytes,
                                   static_cast<std::uint32_t>(ctx.config.max_header_bytes));
            request_started_ = ctx.now;
            continue_sent_ = false;
        }
        boost::beast::error_code ec;
        RequestParser& parser = *state_->parser;
        const std::size_t used = parser.put(boost::asio::const_buffer(data + consumed, size - consumed), ec);
        consumed += used;
        if (ec == boost::beast::http::error::need_more) {
            maybe_send_continue(out);
            break;
        }
        if (ec) {
            answer_parse_error(ctx, ec, out);
            break;
        }
        if (parser.is_done()) {
            answer_request(ctx, out);
        } else {
            maybe_send_continue(out);
            if (used == 0) break;
        }
    }
    if (size - consumed >= max_buffered_bytes && !awaiting_delay_ && !close_after_write_) {
        answer_bad_request(ctx, out);  // no progress possible: the buffer is full
    }
    return consumed;
}

// curl and others wait for "100 Continue" before sending a body they announced.
void RequestProcessor::maybe_send_continue(std::string& out) {
    if (!state_) return;
    const RequestParser& parser = *state_->parser;
    if (parser.is_header_done() && !parser.is_done() && parser.expects_continue() && !continue_sent_) {
        continue_sent_ = true;
        out += "HTTP/1.1 100 Continue\r\n\r\n";
    }
}

ConnectionHeader RequestProcessor::connection_header(bool keep_alive) const {
    if (!keep_alive) return ConnectionHeader::close;
    return state_->parser->version() < 11 ? ConnectionHeader::keep_alive : ConnectionHeader::none;
}

void RequestProcessor::answer_request(HandlerContext& ctx, std::string& out) {
    const bool keep_alive = state_->parser->keep_alive() && !ctx.stopping;
    const ConnectionHeader ch = connection_header(keep_alive);
    const bool head_only = state_->parser->method() == boost::beast::http::verb::head;
    const Answer answer = answer_for(match_route(state_->parser->method(), state_->scratch.target));
    if (answer.delayed) {
        awaiting_delay_ = true;
        delay_ms_ = answer.delay_ms;
        delay_connection_header_ = ch;
        delay_head_only_ = head_only;
    } else {
        encode(ctx, answer, ch, head_only, out);
    }
    end_request(ctx);
    if (!keep_alive) close_after_write_ = true;
}

// The HTTP/1.1 encoder. The constant answers are the worker's prebuilt bytes (the fast
// path: one copy, nothing formatted per request); the rest is formatted into `out`.
// A HEAD answer is the same bytes less the content: for the prebuilt ones, a shorter view.
void RequestProcessor::encode(HandlerContext& ctx, const Answer& answer, ConnectionHeader ch, bool head_only,
                              std::string& out) {
    const auto prebuilt = [&](std::string_view response, std::string_view body) {
        if (head_only) response.remove_suffix(body.size());
        out += response;
    };
    switch (answer.kind) {
        case RequestKind::plaintext:
            prebuilt(prebuilt_responses(ctx).plaintext(ch), plaintext_body);
            break;
        case RequestKind::json:
            prebuilt(prebuilt_responses(ctx).json(ch), json_body);
            break;
        case RequestKind::echo: {
            const RequestScratch& request = state_->scratch;
            const std::string_view type =
                request.content_type.empty() ? default_echo_type : std::string_view(request.content_type);
            append_response(out, {answer.status, ctx.date_value(), type, ch, {}, ctx.alt_svc}, request.body);
            break;
        }
        default: {
            const ResponseHead head{answer.status, ctx.date_value(), answer.content_type, ch,
                                    answer.allow,  ctx.alt_svc};
            if (head_only) {
                append_response_head(out, head, answer.body.size());
            } else {
                append_response(out, head, answer.body);
            }
            break;
        }
    }
    ctx.counters.request(answer.kind);
}

void RequestProcessor::answer_parse_error(HandlerContext& ctx, const boost::beast::error_code& ec, std::string& out) {
    namespace http = boost::beast::http;
    const RequestParser& parser = *state_->parser;
    RequestKind kind = RequestKind::bad_request;
    if (parser.refusal() == RequestParser::Refusal::not_implemented) {
        kind = RequestKind::not_implemented;
    } else if (ec == http::error::header_limit) {
        kind = RequestKind::header_too_large;
    } else if (ec == http::error::body_limit) {
        kind = RequestKind::body_too_large;
    }
    // The method is known once the request line parsed; a HEAD gets no content even now.
    encode(ctx, limit_answer(kind), ConnectionHeader::close, parser.method() == http::verb::head, out);
    end_request(ctx);
    close_after_write_ = true;
    error_close_ = true;
}

void RequestProcessor::answer_bad_request(HandlerContext& ctx, std::string& out) {
    encode(ctx, limit_answer(RequestKind::bad_request), ConnectionHeader::close, /*head_only=*/false, out);
    end_request(ctx);
    close_after_write_ = true;
    error_close_ = true;
}

void RequestProcessor::finish_delay(HandlerContext& ctx, std::string& out) {
    awaiting_delay_ = false;
    encode(ctx, delay_answer(), delay_connection_header_, delay_head_only_, out);
    if (delay_connection_header_ == ConnectionHeader::close) close_after_write_ = true;
}

}  // namespace loadbench::server
