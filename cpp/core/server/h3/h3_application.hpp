#pragma once
// The HTTP/3 half of a server connection (nghttp3 0.8): the client's request, control and QPACK
// streams in, responses out - with no QUIC in it. Packets, encryption, flow-control windows and
// stream states belong to the QUIC connection (Http3Session, over ngtcp2), which this half
// reaches only through QuicStreams and which hands it stream data as it arrives. Kept apart so
// a fuzzer drives exactly this half with arbitrary stream bytes (server_h3_fuzz): random
// datagrams would almost all die at QUIC's packet decryption.
//
// Requests are routed by the protocol-neutral handler (match_route, answer_for, limit_answer)
// and encoded as a HEADERS frame (ResponseFields) plus the body as DATA. Limits: --max-body (413,
// also from content-length before any DATA), --max-header (431), --header-timeout-ms (a stream
// whose header section is late is shut down with H3_REQUEST_INCOMPLETE; the connection goes on).
// Request bodies are consumed as they arrive, so the client's windows open again at once.
#include "core/server/app/answer.hpp"
#include "core/server/app/handler_context.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

struct nghttp3_conn;

namespace loadbench::server {

// What the HTTP/3 half asks of the QUIC connection beneath it (ngtcp2's calls of the same names).
class QuicStreams {
public:
    virtual ~QuicStreams() = default;
    // The clock QUIC's timers run on (nanoseconds; quic_now() in the server).
    virtual std::uint64_t now() = 0;
    // A new unidirectional stream of ours (the control and QPACK streams). False: none left.
    virtual bool open_uni_stream(std::int64_t& stream_id) = 0;
    // `size` bytes of the stream were used up: the client may send as much more, on the stream
    // and on the connection.
    virtual void extend_max_offsets(std::int64_t stream_id, std::uint64_t size) = 0;
    // STOP_SENDING: nothing more of the stream is read. False: the connection cannot go on.
    virtual bool shutdown_stream_read(std::int64_t stream_id, std::uint64_t app_error_code) = 0;
    // RESET_STREAM: nothing more of the stream is written. False: the connection cannot go on.
    virtual bool shutdown_stream_write(std::int64_t stream_id, std::uint64_t app_error_code) = 0;
    // Both ways at once: the request is abandoned, the connection goes on.
    virtual void shutdown_stream(std::int64_t stream_id, std::uint64_t app_error_code) = 0;
};

// Stream data ready to send: pieces of one stream, its FIN with the last.
struct StreamData {
    struct Piece {
        const std::uint8_t* data;
        std::size_t size;
    };
    static constexpr std::size_t max_pieces = 16;
    std::int64_t stream_id = -1;  // -1: nothing to send
    bool fin = false;
    std::size_t count = 0;
    std::array<Piece, max_pieces> pieces{};
};

class Http3Application {
public:
    static constexpr std::uint64_t never = UINT64_MAX;

    Http3Application(HandlerContext& context, QuicStreams& quic);
    ~Http3Application();
    Http3Application(const Http3Application&) = delete;
    Http3Application& operator=(const Http3Application&) = delete;

    // The nghttp3 connection and our control and QPACK streams, once the handshake is done.
    // False: the connection cannot go on.
    bool start(std::uint64_t max_client_streams_bidi);

    // --- from the QUIC connection (each false/negative: a connection error, close it with
    // error_code(), an HTTP/3 application error code) ---
    // Stream data from the client, in order; fin: the stream's last.
    bool read_stream(std::int64_t stream_id, const std::uint8_t* data, std::size_t size, bool fin);
    // What to send next (out.stream_id -1: nothing).
    bool next_stream_data(StreamData& out);
    // QUIC took `size` bytes of what next_stream_data() gave (they are in a packet now).
    void add_write_offset(std::int64_t stream_id, std::size_t size);
    // The stream's flow-control window is full / open again.
    void block_stream(std::int64_t stream_id);
    bool unblock_stream(std::int64_t stream_id);
    // The stream cannot be written any more (the client asked us to stop sending).
    void shutdown_stream_write(std::int64_t stream_id);
    // The client acknowledged `size` more bytes of the stream: nghttp3 may let go of them.
    bool add_ack_offset(std::int64_t stream_id, std::uint64_t size);
    // The client asked us to stop sending the stream (QUIC resets it): no more request data.
    bool shutdown_stream_read(std::int64_t stream_id);
    // The client reset the stream: no more request data. A request that had not arrived whole
    // cannot be answered, so our side is reset too (H3_REQUEST_INCOMPLETE, RFC 9114 4.1.2) -
    // else the stream stayed open on both ends, one of the client's streams gone, until the
    // connection ended.
    bool reset_by_client(std::int64_t stream_id);
    // QUIC closed the stream both ways.
    bool close_stream(std::int64_t stream_id, std::uint64_t app_error_code);
    // QUIC granted the client more request streams (one as each closes).
    void set_max_client_streams_bidi(std::uint64_t max_streams);
    std::uint64_t error_code() const { return error_code_; }

    // --- timers: a /delay answer, a header section's deadline, the final GOAWAY ---
    std::uint64_t next_wakeup() const;
    void on_timer(std::uint64_t now);
    // The server is stopping: a GOAWAY shutdown notice now (no new requests, RFC 9114 5.2), the
    // final GOAWAY (the last stream accepted) at final_goaway_at; the streams in flight finish.
    void begin_shutdown(std::uint64_t final_goaway_at);
    // The final GOAWAY is out and every request stream has closed: time for CONNECTION_CLOSE.
    bool drained() const { return goaway_final_ && live_.empty(); }

private:
    struct Stream;
    struct Callbacks;

    void on_request(Stream& st);
    void respond(Stream& st, const Answer& answer);
    // An nghttp3 error that ends the connection: keeps its HTTP/3 error code, returns false.
    bool failed(int nghttp3_error);

    HandlerContext& ctx_;
    QuicStreams& quic_;
    nghttp3_conn* conn_ = nullptr;
    std::vector<Stream*> live_;  // owned: freed on nghttp3's stream_close or with the application
    std::uint64_t error_code_ = 0;
    bool goaway_final_ = false;
    std::uint64_t final_goaway_at_ = never;
};

}  // namespace loadbench::server
