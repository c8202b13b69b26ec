#include "core/generator/sessions/http1_session.hpp"

#include <algorithm>

namespace loadbench::generator {

Http1Session::Http1Session(const std::vector<std::string>& wire, const std::vector<bool>& head, SessionEvents& events,
                           int depth)
    : wire_(wire), head_(head), events_(events), depth_(std::max(depth, 1)), ring_(static_cast<size_t>(depth_)) {
    // carry_ gets storage only when a response is split mid-header (rare): reserving 1 KiB
    // up front cost ~1 KiB of RSS on every connection of `loadbench run -c N` (C10k).
    if (depth_ > 1) {
        // The most the gathered bytes can hold: submit() drops the written ones before it
        // appends, so no request ever allocates.
        size_t largest = 0;
        for (const auto& w : wire_) largest = std::max(largest, w.size());
        out_.reserve(largest * static_cast<size_t>(depth_));
    }
}

void Http1Session::reset() noexcept {
    carry_.clear();
    first_ = 0;
    count_ = 0;
    counted_ = 0;
    fully_written_ = 0;
    written_ = 0;
    out_.clear();
    out_pos_ = 0;
    reusable_ = true;
}

void Http1Session::submit(const Request& r) noexcept {
    Request& slot = at(count_);
    slot = r;
    slot.sent_ns = slot.written_ns = slot.first_byte_ns = 0;  // a re-sent request is timed anew
    if (count_ == 0) parser_.start(head_[r.template_index]);
    ++count_;
    counted_ += r.counted ? 1 : 0;
    if (depth_ > 1) {
        if (out_pos_ == out_.size()) {
            out_.clear();  // everything gathered so far went out (the usual case)
        } else if (out_pos_ > 0) {
            out_.erase(0, out_pos_);  // the end of a partial write still waits: keep only it
        }
        out_pos_ = 0;
        out_.append(wire_[r.template_index]);
    }
}

std::string_view Http1Session::output() const noexcept {
    if (depth_ == 1) {
        if (count_ == 0 || fully_written_ == 1) return {};
        return std::string_view(wire_of(0)).substr(written_);
    }
    // A connection that will not carry more writes nothing more (its owner closes it).
    if (!reusable_) return {};
    return std::string_view(out_).substr(out_pos_);
}

void Http1Session::wrote(size_t n, int64_t now) noexcept {
    if (n == 0) return;
    if (depth_ > 1) out_pos_ += n;
    // One write may carry the end of one request and several whole ones: each gets its own
    // send time, that of the write its first byte went out with.
    while (n > 0 && fully_written_ < count_) {
        if (written_ == 0) {
            Request& r = at(fully_written_);
            r.sent_ns = now;
            events_.on_request_sent(r, now);
        }
        const size_t left = wire_of(fully_written_).size() - written_;
        if (n < left) {
            written_ += n;
            return;
        }
        n -= left;
        written_ = 0;
        at(fully_written_).written_ns = now;
        ++fully_written_;
    }
}

InputResult Http1Session::input(const char* data, size_t n, int64_t now) noexcept {
    if (count_ == 0 || !reusable_) {
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
    while (true) {
        // bytes for the oldest request in flight: the first of its response arrived now (a
        // pipelined one's may be the end of the read that completed the one before)
        if (Request& head = at(0); head.first_byte_ns == 0) head.first_byte_ns = now;
        size_t consumed = 0;
        switch (parser_.parse(data, len, consumed)) {
            case http::ResponseParser::Status::Complete:
                if (consumed < len) {
                    // Bytes beyond this response belong to the next request in flight. With none
                    // (or after a response that ends the connection) they can only come from a
                    // server whose framing is wrong (e.g. a Content-Length shorter than the body):
                    // a parse error whether or not they arrived in the same read as the response.
                    if (count_ == 1) {
                        error_ = "parse: " + std::to_string(len - consumed) +
                                 " bytes after a complete response (wrong Content-Length?)";
                        return InputResult::Error;
                    }
                    if (!parser_.keep_alive() || fully_written_ == 0) {
                        error_ = "parse: " + std::to_string(len - consumed) +
                                 " bytes after a response that ended the connection (Connection: close)";
                        return InputResult::Error;
                    }
                }
                complete(now);
                if (consumed == len) return InputResult::Ok;
                data += consumed;
                len -= consumed;
                continue;  // the next pipelined response, in the same read
            case http::ResponseParser::Status::Error:
                error_ = std::string("parse: ") + parser_.error();
                return InputResult::Error;
            case http::ResponseParser::Status::NeedMore:
                if (consumed < len) carry_.assign(data + consumed, len - consumed);
                return InputResult::Ok;
        }
        return InputResult::Ok;
    }
}

InputResult Http1Session::input_eof(int64_t now) noexcept {
    if (count_ > 0 && reusable_ && parser_.finish_at_eof() == http::ResponseParser::Status::Complete) {
        complete(now);
        reusable_ = false;  // requests behind it (pipelined) were never answered
        return InputResult::Ok;
    }
    error_ = "read: the server closed the connection mid-response";
    return InputResult::Error;
}

void Http1Session::complete(int64_t now) noexcept {
    Request& r = at(0);  // stays intact until a submit reuses the slot
    const int status = parser_.status_code();
    // A response that ended before its request was fully written leaves the stream unusable.
    const bool written = fully_written_ > 0;
    reusable_ = parser_.keep_alive() && written;
    if (written) {
        --fully_written_;
    } else {
        written_ = 0;  // the rest of its bytes will never go out
    }
    first_ = slot(1);
    --count_;
    counted_ -= r.counted ? 1 : 0;
    // The next one, in order (also when the connection ends here: take_in_flight then finds it
    // without a response byte).
    if (count_ > 0) parser_.start(head_[at(0).template_index]);
    events_.on_response(r, status, now);
}

int64_t Http1Session::oldest_assigned_ns() const noexcept {
    int64_t oldest = INT64_MAX;
    for (int i = 0; i < count_; ++i) oldest = std::min(oldest, at(i).assigned_ns);
    return oldest;
}

size_t Http1Session::take_in_flight(Request* out, bool* answered, size_t capacity) noexcept {
    size_t n = 0;
    // Oldest first: only the oldest can have had a byte of its response (answered); the ones
    // behind it in a pipeline never reached the server's handler as far as we know.
    while (count_ > 0 && n < capacity) {
        out[n] = at(0);
        answered[n] = parser_.started();
        if (fully_written_ > 0) {
            --fully_written_;
        } else {
            written_ = 0;
        }
        first_ = slot(1);
        --count_;
        counted_ -= out[n].counted ? 1 : 0;
        ++n;
        if (count_ > 0) parser_.start(head_[at(0).template_index]);
    }
    if (count_ == 0) {
        out_.clear();
        out_pos_ = 0;
    }
    return n;
}

}  // namespace loadbench::generator
