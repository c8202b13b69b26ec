#pragma once
// HTTP/1.1's per-worker state: the constant responses (plaintext, json), serialised once per
// Date second and Alt-Svc value rather than per request, and the pool of request parsers
// (a connection holds one only while a request is in progress). The worker's HandlerContext
// owns it without naming its type; it is made here on first use.
#include "core/server/app/handler_context.hpp"
#include "core/server/h1/request_parser.hpp"
#include "core/server/h1/responses.hpp"

#include <cstdint>

namespace loadbench::server {

struct Http1State {
    ResponseCache responses;
    std::uint32_t responses_epoch = 0;  // the context's response_epoch they were built for
    // Parsers for the HTTP/1.1 requests in progress (RequestProcessor takes and gives back).
    RequestStatePool request_states;
};

inline Http1State& http1_state(HandlerContext& ctx) {
    if (!ctx.http1) ctx.http1 = {new Http1State, [](Http1State* state) { delete state; }};
    return *ctx.http1;
}

// The prebuilt responses for the context's current Date and Alt-Svc values.
inline const ResponseCache& prebuilt_responses(HandlerContext& ctx) {
    Http1State& state = http1_state(ctx);
    if (state.responses_epoch != ctx.response_epoch) {
        state.responses.rebuild(ctx.date_value(), ctx.alt_svc);
        state.responses_epoch = ctx.response_epoch;
    }
    return state.responses;
}

}  // namespace loadbench::server
