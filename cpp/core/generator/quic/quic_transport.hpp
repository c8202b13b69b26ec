#pragma once
// QUIC as a transport: one client QUIC connection (ngtcp2, Debian 12's 0.12 API, with GnuTLS for
// its TLS 1.3), sans-I/O - datagrams in, datagrams out, one timer (ngtcp2_conn_get_expiry) that
// the Connection drives through the event loop. It is to HTTP/3 what TCP and TlsTransport are to
// HTTP/1.1 and HTTP/2 (h2load's split: QUIC lives in its Client, beside TCP and TLS): the
// handshake, packets, loss recovery, flow control, CONNECTION_CLOSE, session resumption and
// 0-RTT are here; the application protocol on its streams (Http3Session) is a QuicStreams.
//  - quic_transport.cpp: the TLS session, the connection, packets in and out, expiry, close;
//    quic_resumption.cpp: session tickets and 0-RTT (QuicOptions::resume, ::early_data).
//  - ALPN "h3" only, TLS 1.3 only. Certificate verification as for TCP TLS: off unless verify
//    or a CA file is asked for.
//  - Resumption: the newest session ticket the server sent on this connection slot's
//    connections is offered by the next one - the scope of TCP's TlsTransport, which keeps its
//    newest session per slot too; with early data that connection's first stream data leaves in
//    0-RTT packets beside its Initial, and goes again in 1-RTT if the server refuses it.
#ifdef LOADBENCH_HAVE_HTTP3  // the build found ngtcp2, GnuTLS and nghttp3 (CMakeLists.txt)
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/generator/base/request.hpp"

namespace loadbench::generator {

struct QuicOptions {
    std::string server_name;  // SNI (unless an IP literal) and the name verified
    bool server_name_is_ip = false;
    bool verify = false;
    std::string cacert;                // PEM file; empty: the system's trust store when verifying
    int64_t handshake_timeout_ns = 0;  // 0: ngtcp2's default
    bool resume = false;               // keep session tickets and resume with them
    bool early_data = false;           // resume: send the first stream data as 0-RTT (replayable)
    uint64_t no_error_code = 0;        // the application's NO_ERROR, for CONNECTION_CLOSE (HTTP/3: 0x100)
};

// What the QUIC transport asks of the application protocol on its streams (HTTP/3). Called from
// inside the transport's input, timer and packet writing; a failure is reported with
// QuicTransport::fail (its reason is the connection's error) and a false or negative return.
class QuicStreams {
public:
    // The handshake completed (h3 selected): the application starts, or goes on after 0-RTT.
    virtual bool on_established() noexcept = 0;
    // A resumed connection with 0-RTT, before its first packet: the application starts now, and
    // its first stream data leaves as early data.
    virtual bool on_early_start() noexcept = 0;
    // The server refused the early data: everything the application sent in it is void (its
    // streams are gone); it sends it again after on_established.
    virtual void on_early_data_rejected() noexcept = 0;
    // Stream data arrived: the bytes the application consumed (the transport extends the flow
    // control windows by them), or < 0 on an error.
    virtual int64_t on_stream_data(int64_t stream_id, const uint8_t* data, size_t n, bool fin) noexcept = 0;
    // The server acknowledged `n` more bytes of the stream; the stream closed (with the
    // application's error code, NO_ERROR when none); the server reset it or stopped reading it;
    // its flow-control window grew; the server allows more bidirectional streams.
    virtual bool on_stream_acked(int64_t stream_id, uint64_t n) noexcept = 0;
    virtual bool on_stream_close(int64_t stream_id, uint64_t app_error_code) noexcept = 0;
    virtual bool on_stream_reset(int64_t stream_id) noexcept = 0;
    virtual bool on_stream_unblocked(int64_t stream_id) noexcept = 0;
    virtual void on_more_streams() noexcept = 0;
    // Writing a packet: the next stream data to send (the number of vecs filled, 0: none, < 0:
    // an error), then what became of it - `n` bytes of it went into the packet (`fin`: and the
    // stream's FIN with them), the stream is blocked by flow control, or its sending side is shut.
    virtual int64_t next_stream_data(int64_t& stream_id, bool& fin, ngtcp2_vec* vec, size_t capacity) noexcept = 0;
    virtual void on_stream_data_packed(int64_t stream_id, size_t n, bool fin) noexcept = 0;
    virtual void on_stream_blocked(int64_t stream_id) noexcept = 0;
    virtual void on_stream_shut_write(int64_t stream_id) noexcept = 0;
    // The datagram holding what was packed since the last one left at `now`.
    virtual void on_datagram_sent(int64_t now) noexcept = 0;
    // Requests on the connection's streams (the server closing it then is an error), and
    // whether one of them belongs to the measured window.
    virtual int in_flight() const noexcept = 0;
    virtual bool carries_counted() const noexcept = 0;

protected:
    ~QuicStreams() = default;
};

class QuicTransport {
public:
    explicit QuicTransport(const QuicOptions& options);
    ~QuicTransport();
    QuicTransport(const QuicTransport&) = delete;
    QuicTransport& operator=(const QuicTransport&) = delete;

    // The application on the streams (set once, before start()).
    void bind(QuicStreams& streams) noexcept { streams_ = &streams; }
    // A new connection: forget the last one (its kept session ticket stays).
    void reset() noexcept;
    // Begins the handshake on a connected UDP socket's addresses (false: error() says why).
    bool start(const sockaddr* local, socklen_t local_len, const sockaddr* remote, socklen_t remote_len,
               int64_t now) noexcept;
    // Requests may flow (the handshake completed).
    bool established() const noexcept { return handshake_done_; }
    // The next datagram to send (empty: nothing now), and that it left at `now` (whole: a
    // datagram is never cut).
    std::string_view output() noexcept;
    void wrote(int64_t now) noexcept;
    // One datagram from the server. Error: the connection is over (error() says why).
    InputResult input(const char* data, size_t n, int64_t now) noexcept;
    // When on_expiry() must run (INT64_MAX: no timer), and the timer's work: retransmissions,
    // ACKs, the handshake and idle timeouts.
    int64_t expiry_ns() const noexcept;
    InputResult on_expiry(int64_t now) noexcept;
    // The last datagram before the socket closes (CONNECTION_CLOSE; empty: none due).
    std::string_view farewell(int64_t now) noexcept;
    // The connection failed outside input() (writing a packet, the application's own error).
    bool broken() const noexcept { return failed_; }
    // The server closed the connection (CONNECTION_CLOSE received), or it failed: no more
    // requests on it.
    bool finished() const noexcept { return failed_ || closed_by_peer_; }
    const std::string& error() const noexcept { return error_; }
    // How the handshake went, once established(): resumed an earlier session, what became of
    // 0-RTT, and whether a counted request was on the connection then (with 0-RTT its response
    // may be complete by the time the Connection hears of the handshake).
    bool resumed() const noexcept { return resumed_; }
    EarlyData early_data() const noexcept { return early_data_; }
    bool counted_at_handshake() const noexcept { return counted_at_handshake_; }

    // For the application on its streams: the connection (opening streams, extending their
    // flow control, shutting them), the time of the datagram or timer being handled, and its
    // failure (false; the first reason wins).
    ngtcp2_conn* conn() const noexcept { return quic_; }
    int64_t now() const noexcept { return now_; }
    bool fail(const std::string& why) noexcept;

private:
    friend struct QuicCallbacks;

    bool setup_tls() noexcept;
    void teardown() noexcept;
    // Writes the next datagram into packet_ (packet_len_ > 0), or nothing is left to send.
    void produce() noexcept;
    void read_close_reason() noexcept;
    bool handshake_completed() noexcept;
    // quic_resumption.cpp: session tickets and 0-RTT.
    bool resume_from_ticket() noexcept;  // before the first packet: offer the kept ticket
    void keep_ticket() noexcept;         // a NewSessionTicket arrived
    // At the handshake's end: whether the server took the early data; if not, the application
    // sends again what went in it.
    bool settle_early_data() noexcept;

    QuicOptions options_;
    QuicStreams* streams_ = nullptr;
    bool failed_ = false;
    bool closed_by_peer_ = false;  // CONNECTION_CLOSE received (draining)
    bool handshake_done_ = false;
    int64_t now_ = 0;
    std::string error_;
    // Resumption: kept across reset() (the connection slot's newest ticket, and the server's
    // transport parameters that came with it: 0-RTT is sent within the limits they set).
    std::vector<uint8_t> ticket_;
    ngtcp2_transport_params ticket_params_{};
    bool resumed_ = false;
    bool sending_early_ = false;  // 0-RTT attempted on this connection, the outcome not known yet
    bool counted_at_handshake_ = false;
    EarlyData early_data_ = EarlyData::NotAttempted;

    gnutls_certificate_credentials_t credentials_ = nullptr;
    gnutls_session_t tls_ = nullptr;
    ngtcp2_crypto_conn_ref conn_ref_{};
    ngtcp2_conn* quic_ = nullptr;
    ngtcp2_path_storage path_{};
    std::vector<uint8_t> packet_;
    size_t packet_len_ = 0;
};

}  // namespace loadbench::generator

#else  // no QUIC in this build: the Connection never makes one (connection_datagram.cpp)

namespace loadbench::generator {
class QuicTransport {};
}  // namespace loadbench::generator

#endif  // LOADBENCH_HAVE_HTTP3
