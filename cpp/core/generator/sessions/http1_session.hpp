#pragma once
// HTTP/1.1 over one connection: up to `depth` requests in flight, written back to back
// (pipelining; depth 1 is plain keep-alive), their responses matched in order and framed by
// the incremental ResponseParser; a partial header block or chunk line is kept between reads.
// With depth 1 the request bytes are the plan's serialised template itself, never copied; a
// deeper pipeline gathers the templates of the requests not yet written into one buffer,
// sized once, so several requests leave in one write.
#include <string>
#include <vector>

#include "core/generator/sessions/session.hpp"
#include "core/http/response_parser.hpp"

namespace loadbench::generator {

class Http1Session final : public StreamSession {
public:
    Http1Session(const std::vector<std::string>& wire, const std::vector<bool>& head, SessionEvents& events,
                 int depth = 1);

    void reset() noexcept override;
    int free_slots() const noexcept override { return depth_ - count_; }
    bool gathers_writes() const noexcept override { return depth_ > 1; }
    int in_flight() const noexcept override { return count_; }
    void submit(const Request& r) noexcept override;
    std::string_view output() const noexcept override;
    void wrote(size_t n, int64_t now) noexcept override;
    InputResult input(const char* data, size_t n, int64_t now) noexcept override;
    InputResult input_eof(int64_t now) noexcept override;
    // False after a response that closes the connection (Connection: close, or delimited by
    // the close) or one that ended before its request was written; requests still in flight
    // then were never answered, and the owner sends them again on a fresh connection.
    bool reusable() const noexcept override { return reusable_; }
    int64_t oldest_assigned_ns() const noexcept override;
    bool carries_counted() const noexcept override { return counted_ > 0; }
    size_t take_in_flight(Request* out, bool* answered, size_t capacity) noexcept override;
    const std::string& error() const noexcept override { return error_; }
    // Bytes kept between reads (a partial header block or chunk line; bounded by the parser).
    size_t carried_bytes() const noexcept { return carry_.size(); }

private:
    InputResult parse(const char* data, size_t len, int64_t now) noexcept;
    void complete(int64_t now) noexcept;
    // The i-th request in flight, oldest first (0 <= i < depth_: no division on the request path).
    int slot(int i) const noexcept { return first_ + i < depth_ ? first_ + i : first_ + i - depth_; }
    Request& at(int i) noexcept { return ring_[static_cast<size_t>(slot(i))]; }
    const Request& at(int i) const noexcept { return ring_[static_cast<size_t>(slot(i))]; }
    const std::string& wire_of(int i) const noexcept { return wire_[at(i).template_index]; }

    const std::vector<std::string>& wire_;
    const std::vector<bool>& head_;
    SessionEvents& events_;
    const int depth_;
    http::ResponseParser parser_;  // framing the response of the oldest request in flight
    std::string carry_;            // an incomplete header block / chunk line from the last read
    // The requests in flight, oldest first: ring_[first_ .. first_ + count_), modulo depth_.
    std::vector<Request> ring_;
    int first_ = 0;
    int count_ = 0;
    int counted_ = 0;        // of those, counted ones (carries_counted)
    int fully_written_ = 0;  // of those, the oldest ones whose bytes have all gone out
    size_t written_ = 0;     // bytes gone out of the next one (at(fully_written_))
    // depth > 1: the bytes not yet written of every request not yet fully written, from out_pos_
    // (capacity: depth x the largest template, reserved once).
    std::string out_;
    size_t out_pos_ = 0;
    bool reusable_ = true;
    std::string error_;
};

}  // namespace loadbench::generator
