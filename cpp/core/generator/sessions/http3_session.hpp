#pragma once
// HTTP/3 on the streams of one QUIC connection: nghttp3 (0.8 API, sans-I/O) for HTTP/3, over the
// QuicTransport (quic_transport.hpp) that the Connection owns beside it - the handshake,
// packets, timers and 0-RTT are the transport's; the control and QPACK streams, one request per
// bidirectional stream and the request slots are here. Up to min(streams, the server's
// initial_max_streams_bidi) requests in flight, as Http2Session does per HTTP/2 stream.
//  - Two files: http3_session.cpp is the Session (request slots) and the QuicStreams side (what
//    the transport hands up and asks for), http3_callbacks.cpp nghttp3's C callbacks.
//  - Requests submitted before the handshake completes wait in their slots and go out the
//    moment it does - or, with 0-RTT on a resumed connection, at once as early data.
//  - Header fields are the HTTP/2 ones (make_h2_request): the same pseudo-headers, the same
//    connection-specific fields dropped (RFC 9114 4.2).
#include <nghttp3/nghttp3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/generator/base/plan.hpp"
#include "core/generator/quic/quic_transport.hpp"
#include "core/generator/sessions/session.hpp"

namespace loadbench::generator {

class Http3Session final : public Session, public QuicStreams {
public:
    // HTTP/3's NO_ERROR (RFC 9114 8.1): the transport's CONNECTION_CLOSE carries it.
    static constexpr uint64_t kNoError = NGHTTP3_H3_NO_ERROR;

    // Binds itself to `quic` as the application on its streams.
    Http3Session(const std::vector<H2Request>& requests, int streams, bool one_per_connection, QuicTransport& quic,
                 SessionEvents& events);
    ~Http3Session() override;
    Http3Session(const Http3Session&) = delete;
    Http3Session& operator=(const Http3Session&) = delete;

    // Session (its bytes are the QUIC transport's stream data, below).
    void reset() noexcept override;
    int free_slots() const noexcept override;
    int in_flight() const noexcept override { return used_; }  // also QuicStreams'
    void submit(const Request& r) noexcept override;
    bool reusable() const noexcept override;
    int64_t oldest_assigned_ns() const noexcept override;
    bool carries_counted() const noexcept override;  // also QuicStreams'
    size_t take_in_flight(Request* out, bool* answered, size_t capacity) noexcept override;
    const std::string& error() const noexcept override { return quic_.error(); }
    bool reads_when_idle() const noexcept override { return true; }
    bool gathers_writes() const noexcept override { return true; }
    size_t take_expired(int64_t assigned_before, Request* out, size_t capacity) noexcept override;

    // QuicStreams: what the transport hands up and asks for.
    bool on_established() noexcept override;
    bool on_early_start() noexcept override;
    void on_early_data_rejected() noexcept override;
    int64_t on_stream_data(int64_t stream_id, const uint8_t* data, size_t n, bool fin) noexcept override;
    bool on_stream_acked(int64_t stream_id, uint64_t n) noexcept override;
    bool on_stream_close(int64_t stream_id, uint64_t app_error_code) noexcept override;
    bool on_stream_reset(int64_t stream_id) noexcept override;
    bool on_stream_unblocked(int64_t stream_id) noexcept override;
    void on_more_streams() noexcept override { open_streams(); }
    int64_t next_stream_data(int64_t& stream_id, bool& fin, ngtcp2_vec* vec, size_t capacity) noexcept override;
    void on_stream_data_packed(int64_t stream_id, size_t n, bool fin) noexcept override;
    void on_stream_blocked(int64_t stream_id) noexcept override;
    void on_stream_shut_write(int64_t stream_id) noexcept override;
    void on_datagram_sent(int64_t now) noexcept override;

    struct Slot {
        Request request;
        int64_t stream_id = -1;
        int status = 0;
        bool used = false;
        bool answered = false;     // response headers arrived
        bool headers_out = false;  // its HEADERS went into the datagram waiting to be written
        bool fin_out = false;      // and its FIN (the request's last byte)
    };

private:
    friend struct Http3Callbacks;

    bool fail(const std::string& why) noexcept { return quic_.fail(why); }
    bool setup_http3() noexcept;   // control and QPACK streams (after the handshake, or for 0-RTT)
    void open_streams() noexcept;  // pending slots get streams while the server allows
    Slot* slot_of(int64_t stream_id) noexcept;
    void release(Slot& s) noexcept;
    void complete(Slot& s) noexcept;
    void drop_http3() noexcept;

    const std::vector<H2Request>& requests_;
    std::vector<std::vector<nghttp3_nv>> nvs_;  // per template, pointing into requests_
    int streams_;
    bool one_per_connection_;
    SessionEvents& events_;
    QuicTransport& quic_;
    std::vector<Slot> slots_;
    int used_ = 0;
    int started_ = 0;
    bool goaway_ = false;
    nghttp3_conn* h3_ = nullptr;
};

}  // namespace loadbench::generator
