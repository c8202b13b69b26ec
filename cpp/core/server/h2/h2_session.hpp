#pragma once
// The HTTP/2 half of a server connection, with no socket in it (like RequestProcessor).
//
// Bytes read from the client go in through receive() (nghttp2_session_mem_recv); the frames
// to write come out of send() (nghttp2_session_mem_send). Requests are routed by the same
// protocol-neutral handler as HTTP/1.1 (answer_for) and encoded here as HEADERS + DATA.
// /delay streams are reported through new_delays(); the connection owns the timers and calls
// finish_delay() when one fires. Kept free of I/O so the fuzzer drives exactly this path.
//
// Limits: a header block decoding to over 4 x the header limit ends the connection (an HPACK
// bomb), SETTINGS_MAX_CONCURRENT_STREAMS (--h2-max-streams; nghttp2 refuses streams beyond
// it with RST_STREAM REFUSED_STREAM), SETTINGS_MAX_HEADER_LIST_SIZE (a larger header list is
// answered 431), --max-body (413, also from content-length before any DATA), --h2-max-requests
// (GOAWAY after that many streams). Flow control is nghttp2's: request DATA is consumed as it
// arrives (a stream keeps at most --max-body, so a connection at most --h2-max-streams x
// --max-body), responses go out as the client's windows allow, at most one write chunk before
// the previous one left.
//
// Stream states (RFC 9113 §5.1). nghttp2 checks frames on idle and open streams, but it
// forgets a stream once closed (no closed streams are kept: memory per connection), and then
// silently ignores DATA or HEADERS for it; and the limit above is ours, so its refusals are
// not nghttp2's either. ClosedStreams remembers the client's recent stream ids - which were
// opened and which we reset - so a frame on a closed stream is the connection error the RFC
// asks for (STREAM_CLOSED; PROTOCOL_ERROR for a HEADERS on a lower id never opened, §5.1.1),
// except after our own RST_STREAM, where frames the client sent before seeing it are ignored.
#include "core/server/app/answer.hpp"
#include "core/server/h2/h2_flood_guard.hpp"
#include "core/server/h2/h2_frame_scanner.hpp"
#include "core/server/app/handler_context.hpp"

#include <bitset>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct nghttp2_session;

namespace loadbench::server {

inline constexpr std::string_view http2_preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

class Http2Session {
public:
    using clock = std::chrono::steady_clock;
    struct Delay {
        std::int32_t stream_id;
        std::uint32_t ms;
    };

    explicit Http2Session(HandlerContext& context);  // queues the server's SETTINGS
    ~Http2Session();
    Http2Session(const Http2Session&) = delete;
    Http2Session& operator=(const Http2Session&) = delete;

    // Feeds bytes read from the client (all of them are consumed). Returns false when the
    // connection cannot go on (bad preface, flood, internal error): the GOAWAY queued for it
    // still comes out of send(); then close. Protocol errors nghttp2 handles itself (GOAWAY,
    // then want_read() and want_write() turn false).
    bool receive(const char* data, std::size_t size);
    // Appends frames ready to go until `out` holds at least `limit` bytes or nothing is
    // left. Returns false on a fatal error (close the connection).
    bool send(std::string& out, std::size_t limit);

    bool want_read() const;
    // Frames queued and not yet produced by send() (responses, refusals, PING/SETTINGS ACKs).
    // While the socket does not take our writes, the connection stops reading once this is
    // high: a client that never reads cannot make us queue answers without bound.
    bool backlogged() const;
    bool want_write() const;
    // Nothing left to read or write: the connection is done (close it).
    bool finished() const { return !want_read() && !want_write(); }

    // Graceful shutdown: GOAWAY (NO_ERROR) for streams not yet begun; open streams finish.
    void shutdown();

    // /delay streams that began since the last call; the caller arms a timer for each.
    std::vector<Delay>& new_delays() { return new_delays_; }
    // A /delay timer fired: answers that stream (nothing if it was reset meanwhile).
    void finish_delay(std::int32_t stream_id);

    std::size_t delayed_streams() const { return delayed_; }
    // Streams whose header block has begun and not ended (the header timeout applies).
    std::size_t streams_awaiting_headers() const { return awaiting_headers_; }
    clock::time_point headers_since() const { return headers_since_; }

private:
    struct Stream;
    struct Callbacks;

    // The client's last `window` stream ids below the highest it used: opened by a HEADERS, or
    // reset by us. Older ids count as opened and closed. Fixed size: no memory per stream.
    class ClosedStreams {
    public:
        // A HEADERS for a new (idle) stream id; ids skipped below it are closed unopened.
        void opened(std::int32_t id);
        void reset_by_us(std::int32_t id);
        std::int32_t highest() const { return highest_; }
        bool was_opened(std::int32_t id) const { return !in_window(id) || opened_[slot(id)]; }
        bool was_reset_by_us(std::int32_t id) const { return in_window(id) && reset_[slot(id)]; }

    private:
        static constexpr std::int32_t window = 1024;  // client ids are odd: 512 slots
        static std::size_t slot(std::int32_t id) { return static_cast<std::size_t>(id >> 1) % (window / 2); }
        bool in_window(std::int32_t id) const { return id > highest_ - window; }
        std::int32_t highest_ = 0;
        std::bitset<window / 2> opened_;
        std::bitset<window / 2> reset_;
    };
    // Feeds bytes to nghttp2; false (GOAWAY queued) on a connection error it found.
    bool feed(const char* data, std::size_t size);
    // A frame header, once nghttp2 has acted on every frame before it: false (GOAWAY queued)
    // when the frame is one too many (Http2FloodGuard) or on a closed stream (§5.1).
    bool admit(const FrameHeader& frame);
    Stream* begin_stream(std::int32_t id);
    void release(Stream* stream);
    void on_request(Stream& stream);
    void respond(Stream& stream, const Answer& answer);
    void header_block_done(Stream& stream);
    void advertise_stream_limit(std::string& out, std::size_t at);
    static constexpr std::uint32_t unlimited_streams = 0xffffffffu;

    HandlerContext& ctx_;
    nghttp2_session* session_ = nullptr;
    std::vector<Stream*> live_;  // owned: nghttp2_session_del does not report closing streams
    std::vector<std::unique_ptr<Stream>> free_streams_;
    std::vector<Delay> new_delays_;
    std::size_t delayed_ = 0;
    std::size_t awaiting_headers_ = 0;
    std::size_t open_streams_ = 0;  // streams begun (not refused) and not yet closed
    clock::time_point headers_since_{};
    std::uint64_t streams_begun_ = 0;
    ClosedStreams closed_streams_;
    Http2FloodGuard flood_guard_;
    Http2FrameScanner scanner_;
    // The decoded size of the header block in progress (RFC 9113 §6.5.2 accounting).
    std::size_t header_block_bytes_ = 0;
    static constexpr std::size_t hpack_bomb_factor = 4;
    bool enhance_your_calm_ = false;    // a callback found abuse: the GOAWAY says ENHANCE_YOUR_CALM
    std::int32_t scanned_highest_ = 0;  // the highest new stream id the scanner has seen a HEADERS for
    bool goaway_submitted_ = false;
    bool settings_sent_ = false;
};

}  // namespace loadbench::server
