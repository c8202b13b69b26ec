#pragma once
// One request on a multiplexed connection - an HTTP/2 stream (Http2Session) or an HTTP/3
// bidirectional stream (Http3Application) - as both protocols read it: the request fields the
// routes need, the header accounting against --max-header (name + value + 32 octets per field:
// RFC 9113 6.5.2, and RFC 9114 4.2.2 counts the same), the answer the routes give, and the
// response's content type. Each protocol keeps only its framing library's calls: how a field
// is named (HPACK names, QPACK tokens), how the response is submitted, how the body is held.
#include "core/server/app/answer.hpp"
#include "core/server/app/response_fields.hpp"
#include "core/server/app/routes.hpp"

#include <boost/beast/http/verb.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loadbench::server {

struct MultiplexedRequest {
    // The request fields the server reads; every other field only counts against the limit.
    enum class Field { method, path, content_type, content_length, other };

    boost::beast::http::verb method = boost::beast::http::verb::unknown;
    std::string target;
    std::string content_type;
    std::string body;
    std::optional<std::uint64_t> content_length;
    std::size_t header_bytes = 0;
    bool header_too_large = false;
    bool headers_done = false;  // no header section (the request's, or trailers) in progress
    bool answered = false;
    bool delayed = false;
    ResponseFields fields;

    // A field of the request's header section. Past `max_header_bytes` the request is marked
    // too large (431) and the rest of its fields are ignored.
    void add_header(Field field, std::string_view name, std::string_view value, std::size_t max_header_bytes) {
        header_bytes += name.size() + value.size() + 32;
        if (header_bytes > max_header_bytes) {
            header_too_large = true;
            return;
        }
        switch (field) {
            case Field::method:
                method = boost::beast::http::string_to_verb(value);
                break;
            case Field::path:
                target.assign(value);
                break;
            case Field::content_type:
                content_type.assign(value);
                break;
            case Field::content_length: {
                std::uint64_t n = 0;
                const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
                if (ec == std::errc{} && end == value.data() + value.size()) content_length = n;
                break;
            }
            case Field::other:
                break;
        }
    }

    // Ready for the next request on a reused stream object.
    void clear(std::size_t kept_body_capacity) {
        method = boost::beast::http::verb::unknown;
        target.clear();
        content_type.clear();
        body.clear();
        if (body.capacity() > kept_body_capacity) std::string().swap(body);
        content_length.reset();
        header_bytes = 0;
        header_too_large = headers_done = answered = delayed = false;
    }

    // What the routes answer the complete request (Answer::delayed: later, delay_answer()).
    Answer route() const { return answer_for(match_route(method, target)); }

    // The response's Content-Type for `answer`: an echo carries the request's own.
    std::string_view response_type(const Answer& answer) const {
        if (!answer.echo) return answer.content_type;
        return content_type.empty() ? default_echo_type : std::string_view(content_type);
    }
    // The request is answered with a HEAD's header block alone (RFC 9110 9.3.2).
    bool head() const { return method == boost::beast::http::verb::head; }
};

}  // namespace loadbench::server
