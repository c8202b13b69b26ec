#pragma once
// The protocol-neutral answer to a request: what a route (or a limit) yields, before any
// protocol turns it into bytes. HTTP/1.1 (RequestProcessor) and HTTP/2 (Http2Session) each
// encode it their own way; routing and counting are the same for both.
#include "core/server/base/counters.hpp"
#include "core/server/app/routes.hpp"

#include <cstdint>
#include <string_view>

namespace loadbench::server {

struct Answer {
    unsigned status = 200;
    RequestKind kind = RequestKind::plaintext;  // what the response is counted as
    std::string_view content_type;              // empty: no Content-Type
    std::string_view body;                      // unless echo
    std::string_view allow;                     // 405: the Allow header's value
    bool echo = false;                          // the body (and Content-Type) are the request's own
    bool delayed = false;                       // answer after delay_ms on a timer (the body is then plaintext)
    std::uint32_t delay_ms = 0;
};

// What a route answers. (The response for a delayed answer is delay_answer().)
Answer answer_for(const RouteMatch& match);
// The response a /delay request gets once its timer fired.
Answer delay_answer();
// A request refused by a limit or a rule: bad_request (400), header_too_large (431),
// body_too_large (413), not_implemented (501).
Answer limit_answer(RequestKind kind);

// Echo answers carry the request's Content-Type, or this when it had none.
// What every protocol's responses carry: the Server value and the constant routes' bodies.
inline constexpr std::string_view server_name = "loadbench";
inline constexpr std::string_view plaintext_body = "Hello, World!\n";
inline constexpr std::string_view json_body = R"({"message":"Hello, World!"})";
inline constexpr std::string_view default_echo_type = "application/octet-stream";

}  // namespace loadbench::server
