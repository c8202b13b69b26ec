#include "core/generator/http1_session.hpp"

namespace loadbench::generator {

Http1Session::Http1Session(const std::vector<std::string>& wire, const std::vector<bool>& head, SessionEvents& events)
    : wire_(wire), head_(head), events_(events) {
    // carry_ gets storage only when a response is split mid-header (rare): reserving 1 KiB
    // up front cost ~1 KiB of RSS on every connection of `loadbench run -c N` (C10k).
}

void Http1Session::reset() noexcept {
    carry_.clear();
    busy_ = false;
    written_ = 0;
    reusable_ = true;
}

void Http1Session::submit(const Request& r) noexcept {
    request_ = r;
    request_.sent_ns = 0;
    written_ = 0;
    busy_ = true;
    parser_.start(head_[r.template_index]);
}

std::string_view Http1Session::output() const noexcept {
    if (!busy_) return {};
    const std::string& wire = wire_[request_.template_index];
    return std::string_view(wire).substr(written_);
}

void Http1Session::wrote(size_t n, int64_t now) noexcept {
    if (n == 0) return;
    if (written_ == 0) {
        request_.sent_ns = now;
        events_.on_request_sent(request_, now);
    }
    written_ += n;
}

InputResult Http1Session::input(const char* data, size_t n, int64_t now) noexcept {
    if (!busy_) {
        error_ = "parse: " + std::to_string(n) + " bytes with no request in flight";
        return InputResult::Error;
    }
    if (carry_.empty()) return parse(data, n, now);
    carry_.append(data, n);  // rare: only a partial header block or chunk line is ever carried
    std::string joined;
    joined.swap(carry_);
    const InputResult result = parse(joined.data(), joined.size(), now);
    if (carry_.empty()) {
        joined.clear();
        carry_.swap(joined);  // keep the capacity
    }
    return result;
}

InputResult Http1Session::parse(const char* data, size_t len, int64_t now) noexcept {
    size_t consumed = 0;
    switch (parser_.parse(data, len, consumed)) {
        case http::ResponseParser::Status::Complete:
            if (consumed < len) {
                // One request is in flight, so bytes beyond its response can only come from a
                // server whose framing is wrong (e.g. a Content-Length shorter than the body):
                // a parse error whether or not they arrived in the same read as the response.
                error_ = "parse: " + std::to_string(len - consumed) +
                         " bytes after a complete response (wrong Content-Length?)";
                return InputResult::Error;
            }
            complete(now);
            return InputResult::Ok;
        case http::ResponseParser::Status::Error:
            error_ = std::string("parse: ") + parser_.error();
            return InputResult::Error;
        case http::ResponseParser::Status::NeedMore:
            if (consumed < len) carry_.assign(data + consumed, len - consumed);
            return InputResult::Ok;
    }
    return InputResult::Ok;
}

InputResult Http1Session::input_eof(int64_t now) noexcept {
    if (busy_ && parser_.finish_at_eof() == http::ResponseParser::Status::Complete) {
        complete(now);
        reusable_ = false;
        return InputResult::Ok;
    }
    error_ = "read: the server closed the connection mid-response";
    return InputResult::Error;
}

void Http1Session::complete(int64_t now) noexcept {
    busy_ = false;
    carry_.clear();
    // A response that ended before its request was fully written leaves the stream unusable.
    reusable_ = parser_.keep_alive() && written_ == wire_[request_.template_index].size();
    events_.on_response(request_, parser_.status_code(), now);
}

size_t Http1Session::take_in_flight(Request* out, bool* answered, size_t capacity) noexcept {
    if (!busy_ || capacity == 0) return 0;
    out[0] = request_;
    answered[0] = parser_.started();
    busy_ = false;
    return 1;
}

}  // namespace loadbench::generator
