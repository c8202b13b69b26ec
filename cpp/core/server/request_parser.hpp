#pragma once
// An HTTP/1.x request parser that keeps only what the routes need.
//
// beast::http::request_parser stores every header field in an allocated list; this parser
// builds on beast::http::basic_parser (the same validated state machine, limits and
// chunked decoding) but copies just the target, Content-Type and body into buffers owned by
// the connection, whose capacity survives from one request to the next. A fresh parser is
// emplaced per request (construction does not allocate).
#include <ostream>  // see routes.hpp

#include <boost/beast/http/basic_parser.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace loadbench::server {

// Per-connection storage the parser writes into; reused across requests.
struct RequestScratch {
    std::string target;
    std::string content_type;
    std::string body;
    void clear() {
        target.clear();
        content_type.clear();
        body.clear();
    }
};

class RequestParser : public boost::beast::http::basic_parser<true> {
public:
    using verb = boost::beast::http::verb;
    using field = boost::beast::http::field;
    using error_code = boost::beast::error_code;
    using string_view = boost::beast::string_view;

    RequestParser(RequestScratch& scratch, std::uint64_t max_body, std::uint32_t max_header);

    verb method() const { return method_; }
    int version() const { return version_; }
    // True when the client sent "Expect: 100-continue" (it waits for an interim response).
    bool expects_continue() const { return expect_continue_; }

private:
    void on_request_impl(verb method, string_view method_str, string_view target, int version, error_code& ec) override;
    void on_response_impl(int, string_view, int, error_code&) override {}
    void on_field_impl(field name, string_view name_string, string_view value, error_code& ec) override;
    void on_header_impl(error_code&) override {}
    void on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code& ec) override;
    std::size_t on_body_impl(string_view body, error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override;
    void on_finish_impl(error_code&) override {}

    RequestScratch& scratch_;
    verb method_ = verb::unknown;
    int version_ = 11;
    bool expect_continue_ = false;
};

// What a request in progress needs (the parser and the fields it keeps): a connection holds
// one only from a request's first byte until it is answered, taken from its worker's
// RequestStatePool, so an idle keep-alive connection does not carry ~200 bytes it is not using
// (C10k memory) and keep-alive load allocates nothing per request.
struct RequestState {
    RequestScratch scratch;
    std::optional<RequestParser> parser;
};

// Single-threaded free list (one per worker, in its HandlerContext).
class RequestStatePool {
public:
    static constexpr std::size_t keep = 16;
    // A state whose body grew past this (a large echo) is freed, not kept.
    static constexpr std::size_t max_kept_body = 64 * 1024;

    std::unique_ptr<RequestState> take() {
        if (free_.empty()) return std::make_unique<RequestState>();
        auto state = std::move(free_.back());
        free_.pop_back();
        return state;
    }
    void give(std::unique_ptr<RequestState>& state) {
        if (!state) return;
        state->parser.reset();
        if (free_.size() < keep && state->scratch.body.capacity() <= max_kept_body) free_.push_back(std::move(state));
        state.reset();
    }

private:
    std::vector<std::unique_ptr<RequestState>> free_;
};

}  // namespace loadbench::server
