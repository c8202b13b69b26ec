#pragma once
// What every layer of a run hands around about one request, below the protocols and the
// transports that carry it: the Request itself from the moment it is due to its outcome, and
// the two words a transport and a session both answer in (an input's result, 0-RTT's outcome).
#include <cstdint>

namespace loadbench::generator {

// One request from the moment it is due to its outcome. Plain data, copied into a session's
// slot and back: nothing is allocated per request.
struct Request {
    int64_t intended_ns = 0;      // closed loop: when its slot freed; open loop: when it was due
    int64_t released_ns = 0;      // open loop: when the worker's loop found it due and queued it
    int64_t assigned_ns = 0;      // when a connection took it: the timeout runs from here
    int64_t sent_ns = 0;          // when its first byte was handed to the transport (0: not yet)
    int64_t written_ns = 0;       // when its last byte was (HTTP/2, HTTP/3: its END_STREAM; 0: not yet)
    int64_t first_byte_ns = 0;    // when the first byte of its response arrived (0: not yet)
    uint32_t template_index = 0;  // which serialised request
    bool counted = false;         // started (closed loop) or due (open loop) inside the window
    bool send_recorded = false;   // its send is in `sends` and the lateness histogram (once)
    bool retried = false;         // already re-sent on a fresh connection once
};

// What became of bytes (or a datagram) handed in: Error - the connection cannot be trusted any
// more, its owner closes it.
enum class InputResult { Ok, Error };

// 0-RTT on a connection: whether its first requests went out as TLS early data, and what the
// server made of them (Rejected: they went again in 1-RTT, each still one request).
enum class EarlyData { NotAttempted, Accepted, Rejected };

}  // namespace loadbench::generator
