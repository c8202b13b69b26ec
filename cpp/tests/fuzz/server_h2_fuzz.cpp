// libFuzzer target: arbitrary client bytes through the server's HTTP/2 receive path.
//
// The input goes the way an Http2Connection delivers socket reads: in pieces (sizes drawn
// from the first byte) into Http2Session::receive, with the frames it produces drained
// through send() after every piece and /delay timers completed at once. Bit 7 of the first
// byte prepends the client preface, so most runs get past it and explore frames. Besides
// the sanitizers' memory and UB checks, it asserts what the connection relies on:
//  - one send() call produces at most its limit plus one frame (bounded write buffer);
//  - the first bytes out are a SETTINGS frame carrying our MAX_CONCURRENT_STREAMS;
//  - after a fatal receive, the session still terminates (nothing left to read or write
//    once its GOAWAY was drained), so a connection never spins.
#include "core/server/base/config.hpp"
#include "core/server/h2/h2_session.hpp"
#include "core/server/app/handler_context.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using namespace loadbench::server;

constexpr std::size_t read_buffer_size = 16 * 1024;  // as Http2Connection
constexpr std::size_t write_chunk = 64 * 1024;
constexpr std::size_t max_frame = 16 * 1024 + 9;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "server_h2_fuzz: invariant broken: %s\n", what);
        std::abort();
    }
}

HandlerContext& context() {
    static const ServerConfig config = [] {
        ServerConfig c;
        c.max_body_bytes = 64 * 1024;  // small enough that 413 is reachable
        c.h2_max_streams = 8;          // small enough that refusals are reachable
        c.h2_max_requests = 64;        // and the GOAWAY after N streams
        return c;
    }();
    static HandlerContext instance(config);
    return instance;
}

// Drains what the session wants to write; returns false once it reported a fatal error.
bool drain(Http2Session& session, bool& first) {
    for (int rounds = 0; rounds < 1000; ++rounds) {
        std::string out;
        if (!session.send(out, write_chunk)) return false;
        check(out.size() < write_chunk + max_frame, "send() produced more than its limit plus one frame");
        if (first && !out.empty()) {
            first = false;
            check(out.size() >= 15 && out[3] == 0x4 && out[10] == 0x3, "first frame is not our SETTINGS");
        }
        if (out.empty()) return true;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::size_t piece = (data[0] % 64 == 0) ? read_buffer_size : data[0] % 64;
    const bool preface = data[0] & 0x80;
    ++data;
    --size;

    std::string input;
    if (preface) input.assign(http2_preface);
    input.append(reinterpret_cast<const char*>(data), size);

    Http2Session session(context());
    bool first = true;
    if (!drain(session, first)) return 0;
    for (std::size_t offset = 0; offset < input.size() && session.want_read();) {
        const std::size_t n = std::min(piece, input.size() - offset);
        const bool ok = session.receive(input.data() + offset, n);
        offset += n;
        for (const auto& d : session.new_delays()) session.finish_delay(d.stream_id);
        session.new_delays().clear();
        if (!drain(session, first)) return 0;
        if (!ok) {
            check(session.finished(), "a fatal receive left a session that still wants to read or write");
            return 0;
        }
    }
    return 0;
}
