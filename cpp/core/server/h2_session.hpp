#pragma once
// The HTTP/2 half of a server connection, with no socket in it (like RequestProcessor).
//
// Bytes read from the client go in through receive() (nghttp2_session_mem_recv); the frames
// to write come out of send() (nghttp2_session_mem_send). Requests are routed by the same
// protocol-neutral handler as HTTP/1.1 (answer_for) and encoded here as HEADERS + DATA.
// /delay streams are reported through new_delays(); the connection owns the timers and calls
// finish_delay() when one fires. Kept free of I/O so the fuzzer drives exactly this path.
//
// Limits: SETTINGS_MAX_CONCURRENT_STREAMS (--h2-max-streams; nghttp2 refuses streams beyond
// it with RST_STREAM REFUSED_STREAM), SETTINGS_MAX_HEADER_LIST_SIZE (a larger header list is
// answered 431), --max-body (413, also from content-length before any DATA), --h2-max-requests
// (GOAWAY after that many streams). Flow control is nghttp2's: request DATA is consumed as it
// arrives (a stream keeps at most --max-body, so a connection at most --h2-max-streams x
// --max-body), responses go out as the client's windows allow, at most one write chunk before
// the previous one left.
#include "core/server/answer.hpp"
#include "core/server/handler_context.hpp"

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
    bool goaway_submitted_ = false;
    bool settings_sent_ = false;
};

}  // namespace loadbench::server
