// libFuzzer target: server bytes through the generator's Http2Session (nghttp2's client receive
// path) as a Connection delivers them: read-sized pieces (the size from the first byte's low six
// bits), every free stream slot filled with a request before each piece (bit 7: the request has
// a body, so DATA and flow control are on the path), the frames the session writes drained after
// each, stream timeouts (bit 6) and the close (input_eof) at the end. Besides the sanitizers'
// checks it asserts what the load logic relies on:
//  - every request submitted ends at most once (response, refusal or stream error), and a
//    response has a status 0..999 (0: the server sent none);
//  - the slot accounting holds: free_slots() + in_flight() <= streams, in_flight() >= 0;
//  - an Error always has a reason; after take_in_flight nothing is in flight.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/generator/sessions/http2_session.hpp"

namespace {

using namespace loadbench::generator;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "http2_session_fuzz: invariant broken: %s\n", what);
        std::abort();
    }
}

struct Events final : SessionEvents {
    int ended = 0;
    void on_request_sent(Request&, int64_t) noexcept override {}
    void on_response(Request&, int status, int64_t) noexcept override {
        check(status >= 0 && status <= 999, "status out of range");
        ++ended;
    }
    void on_refused(Request&, int64_t) noexcept override { ++ended; }
    void on_stream_error(Request&, const std::string& why, int64_t) noexcept override {
        check(!why.empty(), "stream error without a reason");
        ++ended;
    }
};

constexpr int kStreams = 4;

const std::vector<H2Request>& templates() {
    static const std::vector<H2Request> t = [] {
        loadbench::http::RequestTemplate get;
        loadbench::http::RequestTemplate post;
        post.method = "POST";
        post.body.assign(100000, 'x');  // beyond the default 64 KiB window: flow control on the path
        return std::vector<H2Request>{make_h2_request(get, "/", "x", false),
                                      make_h2_request(post, "/echo", "x", false)};
    }();
    return t;
}

void drain(Http2Session& s) {
    for (int i = 0; i < 64; ++i) {
        const std::string_view out = s.output();
        if (out.empty()) return;
        s.wrote(out.size(), 1);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const uint32_t which = (data[0] & 0x80) ? 1 : 0;
    const bool expire = data[0] & 0x40;
    const std::size_t piece = (data[0] & 0x3f) == 0 ? 65536 : (data[0] & 0x3f);
    const char* bytes = reinterpret_cast<const char*>(data + 1);
    --size;

    Events events;
    Http2Session session(templates(), kStreams, false, events);
    session.reset();
    int submitted = 0;
    std::size_t offset = 0;
    bool failed = false;
    int64_t now = 10;
    while (offset < size && !failed) {
        while (session.reusable() && session.free_slots() > 0 && submitted < 64) {
            Request r;
            r.template_index = which;
            r.counted = true;
            r.assigned_ns = now;
            session.submit(r);
            ++submitted;
        }
        check(session.in_flight() >= 0 && session.free_slots() + session.in_flight() <= kStreams, "slot accounting");
        drain(session);
        const std::size_t n = std::min(piece, size - offset);
        failed = session.input(bytes + offset, n, ++now) == InputResult::Error;
        offset += n;
        if (failed) check(!session.error().empty(), "error without a reason");
        drain(session);
        if (expire && !failed) {
            Request out[kStreams];
            const std::size_t k = session.take_expired(now - 2, out, kStreams);
            events.ended += static_cast<int>(k);
        }
        check(events.ended + session.in_flight() == submitted, "every request ends exactly once");
    }
    if (!failed && session.in_flight() > 0 && session.input_eof(++now) == InputResult::Error)
        check(!session.error().empty(), "error without a reason at the close");
    Request left[kStreams];
    bool answered[kStreams];
    const std::size_t k = session.take_in_flight(left, answered, kStreams);
    check(session.in_flight() == 0, "requests left after take_in_flight");
    check(events.ended + static_cast<int>(k) == submitted, "outcomes add up");
    return 0;
}
