#pragma once
// An HTTP/1.x request parser that keeps only what the routes need.
//
// beast::http::request_parser stores every header field in an allocated list; this parser
// builds on beast::http::basic_parser (the same validated state machine, limits and
// chunked decoding) but copies just the target, Content-Type and body into buffers owned by
// the connection, whose capacity survives from one request to the next. A fresh parser is
// emplaced per request (construction does not allocate).
//
// It also enforces what RFC 9112 asks of a server about a request's framing and its Host,
// beyond Beast's own checks, because a server that reads a message boundary or a target host
// differently from a proxy in front of it is what request smuggling needs:
//  - Host: exactly one in an HTTP/1.1 request, valid by its grammar (§3.2; request_target.hpp);
//  - absolute-form targets ("GET http://host/p") are accepted and reduced to their path (§3.2.2);
//  - Transfer-Encoding: chunked must be the final coding and appear once, else the body length
//    is unknown: 400 (§6.3); other codings are not implemented: 501 (§6.1); any
//    Transfer-Encoding in HTTP/1.0: 400 (§6.1). Beast already refuses Transfer-Encoding:
//    chunked together with Content-Length (the RFC's "MAY reject"), and any version but
//    HTTP/1.0 and HTTP/1.1 (400).
// A refused request ends the connection after its answer (RequestProcessor): nothing after it
// is parsed as a next request.
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

    // Why a request was refused beyond Beast's own parse errors (which are all 400s).
    enum class Refusal : std::uint8_t { none, bad_request, not_implemented };

    verb method() const { return method_; }
    // The refusal behind the error put() returned, if it was one of ours.
    Refusal refusal() const { return refusal_; }
    int version() const { return version_; }
    // True when the client sent "Expect: 100-continue" (it waits for an interim response).
    bool expects_continue() const { return expect_continue_; }

private:
    void on_request_impl(verb method, string_view method_str, string_view target, int version, error_code& ec) override;
    void on_response_impl(int, string_view, int, error_code&) override {}
    void on_field_impl(field name, string_view name_string, string_view value, error_code& ec) override;
    void on_header_impl(error_code& ec) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code& ec) override;
    std::size_t on_body_impl(string_view body, error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override;
    void on_finish_impl(error_code&) override {}

    RequestScratch& scratch_;
    verb method_ = verb::unknown;
    int version_ = 11;
    bool expect_continue_ = false;
    Refusal refusal_ = Refusal::none;
    std::uint8_t host_fields_ = 0;
    bool transfer_encoding_ = false;  // a Transfer-Encoding field was seen
    bool chunked_last_ = false;       // ... and its last coding (so far) is chunked
    bool unknown_coding_ = false;     // ... and it names a coding other than chunked

    void refuse(Refusal why, error_code& ec);
    void check_transfer_encoding(string_view value, error_code& ec);
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
