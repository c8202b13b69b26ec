#pragma once
// The request slots of a multiplexed session (Http2Session, Http3Session): one slot per stream
// that may be in flight, each holding its Request while `used`. What the Session interface asks
// of them is the same over both protocols and lives here once; the protocol part is how a slot
// is released (its stream's user data) and how an expired stream is cancelled (RST_STREAM, or
// QUIC's STOP_SENDING + RESET_STREAM).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/generator/sessions/session.hpp"

namespace loadbench::generator::stream_slots {

template <class Slot>
int64_t oldest_assigned_ns(const std::vector<Slot>& slots) noexcept {
    int64_t oldest = INT64_MAX;
    for (const Slot& s : slots)
        if (s.used) oldest = std::min(oldest, s.request.assigned_ns);
    return oldest;
}

template <class Slot>
bool carries_counted(const std::vector<Slot>& slots) noexcept {
    return std::any_of(slots.begin(), slots.end(), [](const Slot& s) { return s.used && s.request.counted; });
}

// Session::take_in_flight: every used slot's request and whether its response had begun.
template <class Slot, class Release>
size_t take_in_flight(std::vector<Slot>& slots, Request* out, bool* answered, size_t capacity,
                      Release release) noexcept {
    size_t n = 0;
    for (Slot& s : slots) {
        if (n == capacity) break;
        if (!s.used) continue;
        out[n] = s.request;
        answered[n] = s.answered;
        ++n;
        release(s);
    }
    return n;
}

// Session::take_expired: the requests assigned at or before `assigned_before`; each one's stream
// is cancelled (the server may stop working on it) and the others go on.
template <class Slot, class Cancel, class Release>
size_t take_expired(std::vector<Slot>& slots, int64_t assigned_before, Request* out, size_t capacity, Cancel cancel,
                    Release release) noexcept {
    size_t n = 0;
    for (Slot& s : slots) {
        if (n == capacity) break;
        if (!s.used || s.request.assigned_ns > assigned_before) continue;
        out[n++] = s.request;
        cancel(s);
        release(s);
    }
    return n;
}

}  // namespace loadbench::generator::stream_slots
