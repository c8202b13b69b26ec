#pragma once
// HTTP/1.1 over one connection: one request in flight (keep-alive, no pipelining), responses
// framed by the incremental ResponseParser. Request bytes are the plan's serialised templates,
// never copied; a partial header block or chunk line is kept between reads.
#include <string>
#include <vector>

#include "core/generator/session.hpp"
#include "core/http/response_parser.hpp"

namespace loadbench::generator {

class Http1Session final : public Session {
public:
    Http1Session(const std::vector<std::string>& wire, const std::vector<bool>& head, SessionEvents& events);

    void reset() noexcept override;
    int free_slots() const noexcept override { return busy_ ? 0 : 1; }
    int in_flight() const noexcept override { return busy_ ? 1 : 0; }
    void submit(const Request& r) noexcept override;
    std::string_view output() const noexcept override;
    void wrote(size_t n, int64_t now) noexcept override;
    InputResult input(const char* data, size_t n, int64_t now) noexcept override;
    InputResult input_eof(int64_t now) noexcept override;
    bool reusable() const noexcept override { return reusable_; }
    int64_t oldest_assigned_ns() const noexcept override { return busy_ ? request_.assigned_ns : INT64_MAX; }
    bool carries_counted() const noexcept override { return busy_ && request_.counted; }
    size_t take_in_flight(Request* out, bool* answered, size_t capacity) noexcept override;
    const std::string& error() const noexcept override { return error_; }
    // Bytes kept between reads (a partial header block or chunk line; bounded by the parser).
    size_t carried_bytes() const noexcept { return carry_.size(); }

private:
    InputResult parse(const char* data, size_t len, int64_t now) noexcept;
    void complete(int64_t now) noexcept;

    const std::vector<std::string>& wire_;
    const std::vector<bool>& head_;
    SessionEvents& events_;
    http::ResponseParser parser_;
    std::string carry_;  // an incomplete header block / chunk line from the last read
    Request request_;
    size_t written_ = 0;
    bool busy_ = false;
    bool reusable_ = true;
    std::string error_;
};

}  // namespace loadbench::generator
