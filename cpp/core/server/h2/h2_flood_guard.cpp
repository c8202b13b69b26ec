#include "core/server/h2/h2_flood_guard.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>

namespace loadbench::server {

bool Http2FloodGuard::Bucket::take(clock::time_point now) {
    if (last != clock::time_point{}) {
        const double elapsed = std::chrono::duration<double>(now - last).count();
        tokens = std::min(burst, tokens + std::max(0.0, elapsed) * per_second);
    }
    last = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
}

const char* Http2FloodGuard::admit(std::uint8_t type, std::uint8_t flags, std::size_t length, clock::time_point now) {
    switch (type) {
        case NGHTTP2_HEADERS:
            continuations_ = 0;
            break;
        case NGHTTP2_CONTINUATION:
            if (++continuations_ > max_continuations) return "CONTINUATION frames in one header block";
            break;
        case NGHTTP2_RST_STREAM:
            if (!resets_.take(now)) return "stream resets (rapid reset)";
            break;
        case NGHTTP2_SETTINGS:
        case NGHTTP2_PING:
            if (!(flags & NGHTTP2_FLAG_ACK) && !empty_.take(now)) return "SETTINGS and PING frames";
            break;
        case NGHTTP2_DATA:
            if (length == 0 && !(flags & NGHTTP2_FLAG_END_STREAM) && !empty_.take(now)) return "empty DATA frames";
            break;
        default:
            break;
    }
    return nullptr;
}

}  // namespace loadbench::server
