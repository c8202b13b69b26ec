#pragma once
// What a client may make an HTTP/2 connection do that nghttp2 1.52 does not bound itself (it
// predates the mitigations of nghttp2 1.57 and 1.61). Http2Session asks admit() about every
// frame header before nghttp2 acts on it; past a limit the connection ends with GOAWAY
// ENHANCE_YOUR_CALM. The limits (docs/server.md lists them for users):
//  - rapid reset (CVE-2023-44487): RST_STREAM frames from the client, a token bucket of 1000
//    refilled at 33 per second (nghttp2 1.57's defaults) - each reset stream cost a routed request;
//  - CONTINUATION flood (CVE-2024-27316): at most 8 CONTINUATION frames per header block
//    (nghttp2 1.61's default); the block's decoded size is bounded by --max-header as well;
//  - SETTINGS and PING floods, and empty DATA frames that do not end a stream (CVE-2019-9518):
//    frames that cost work and carry nothing, a bucket of 1000 refilled at 100 per second. (A
//    client that does not read our ACKs meets nghttp2's own outbound-queue limit first.)
// A frame-level guard, no I/O: unit-tested with a fake clock (server_h2_flood_guard_test.cpp).
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace loadbench::server {

class Http2FloodGuard {
public:
    using clock = std::chrono::steady_clock;

    static constexpr double reset_burst = 1000, resets_per_second = 33;
    static constexpr double empty_burst = 1000, empty_per_second = 100;
    static constexpr std::uint32_t max_continuations = 8;

    // nullptr when the frame is admitted; else what it was one too many of.
    const char* admit(std::uint8_t type, std::uint8_t flags, std::size_t length, clock::time_point now);

private:
    struct Bucket {
        double tokens;
        double per_second;
        double burst;
        clock::time_point last{};
        bool take(clock::time_point now);
    };
    Bucket resets_{reset_burst, resets_per_second, reset_burst};
    Bucket empty_{empty_burst, empty_per_second, empty_burst};
    std::uint32_t continuations_ = 0;  // in the header block in progress
};

}  // namespace loadbench::server
