#pragma once
// HTTP/3 over one QUIC connection: ngtcp2 (Debian 12's 0.12 API, GnuTLS crypto backend) for
// QUIC, nghttp3 (0.8 API) for HTTP/3 - both sans-I/O: datagrams in, datagrams out, and one
// timer (ngtcp2_conn_get_expiry) that the Connection drives through the event loop. One request
// per bidirectional stream, up to min(streams, the server's initial_max_streams_bidi) in
// flight, as Http2Session does per HTTP/2 stream.
//  - Three files: http3_quic.cpp is the QUIC connection (GnuTLS session, packets in and out,
//    expiry, CONNECTION_CLOSE), http3_session.cpp the HTTP/3 streams (nghttp3 set-up, request
//    slots, the Session interface), http3_callbacks.cpp the C callbacks of both libraries.
//  - ALPN "h3" only, TLS 1.3 only (QUIC). Certificate verification as for TCP TLS: off unless
//    verify or a CA file is asked for.
//  - Requests submitted before the handshake completes wait in their slots and go out the
//    moment it does - or, with 0-RTT on a resumed connection, at once as early data.
//  - Resumption (Http3Options::resume; http3_resumption.cpp): the newest session ticket the
//    server sent on this slot's connections is offered by the next one - the scope of TCP's
//    TlsTransport, which keeps its newest session per connection slot too.
//  - Header fields are the HTTP/2 ones (make_h2_request): the same pseudo-headers, the same
//    connection-specific fields dropped (RFC 9114 4.2).
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/generator/plan.hpp"
#include "core/generator/session.hpp"

namespace loadbench::generator {

struct Http3Options {
    std::string server_name;  // SNI (unless an IP literal) and the name verified
    bool server_name_is_ip = false;
    bool verify = false;
    std::string cacert;                // PEM file; empty: the system's trust store when verifying
    int64_t handshake_timeout_ns = 0;  // 0: ngtcp2's default
    bool resume = false;               // keep session tickets and resume with them
    bool early_data = false;           // resume: send the first requests as 0-RTT (replayable)
};

class Http3Session final : public Session {
public:
    Http3Session(const std::vector<H2Request>& requests, int streams, bool one_per_connection,
                 const Http3Options& options, SessionEvents& events);
    ~Http3Session() override;
    Http3Session(const Http3Session&) = delete;
    Http3Session& operator=(const Http3Session&) = delete;

    // Session
    void reset() noexcept override;
    int free_slots() const noexcept override;
    int in_flight() const noexcept override { return used_; }
    void submit(const Request& r) noexcept override;
    std::string_view output() const noexcept override;  // one UDP datagram (empty: none)
    void wrote(size_t n, int64_t now) noexcept override;
    InputResult input(const char* data, size_t n, int64_t now) noexcept override;  // one datagram
    InputResult input_eof(int64_t now) noexcept override;
    bool reusable() const noexcept override;
    int64_t oldest_assigned_ns() const noexcept override;
    bool carries_counted() const noexcept override;
    bool established_counted() const noexcept override { return counted_at_handshake_; }
    size_t take_in_flight(Request* out, bool* answered, size_t capacity) noexcept override;
    const std::string& error() const noexcept override { return error_; }
    bool reads_when_idle() const noexcept override { return true; }
    bool gathers_writes() const noexcept override { return true; }
    size_t take_expired(int64_t assigned_before, Request* out, size_t capacity) noexcept override;
    bool datagrams() const noexcept override { return true; }
    bool start(const sockaddr* local, socklen_t local_len, const sockaddr* remote, socklen_t remote_len,
               int64_t now) noexcept override;
    bool established() const noexcept override { return handshake_done_; }
    int64_t expiry_ns() const noexcept override;
    InputResult on_expiry(int64_t now) noexcept override;
    std::string_view farewell(int64_t now) noexcept override;
    bool broken() const noexcept override { return failed_; }
    bool resumed() const noexcept override { return resumed_; }
    EarlyData early_data() const noexcept override { return early_data_; }

    struct Slot {
        Request request;
        int64_t stream_id = -1;
        int status = 0;
        bool used = false;
        bool answered = false;     // response headers arrived
        bool headers_out = false;  // its HEADERS went into the datagram waiting to be written
    };

private:
    friend struct Http3Callbacks;

    // http3_quic.cpp: the QUIC connection.
    bool setup_tls() noexcept;
    void teardown() noexcept;
    // Writes the next datagram into packet_ (packet_len_ > 0), or nothing is left to send.
    void produce() noexcept;
    bool fail(const std::string& why) noexcept;  // false, error_ set (first reason wins)
    void read_close_reason() noexcept;
    void headers_written(int64_t stream_id) noexcept;  // its HEADERS are in the datagram being built

    // http3_resumption.cpp: session tickets and 0-RTT.
    bool resume_from_ticket() noexcept;  // before the first packet: offer the kept ticket
    void keep_ticket() noexcept;         // a NewSessionTicket arrived
    // At the handshake's end: whether the server took the early data; if not, the requests sent
    // in it go again on fresh streams (each still one request: its send was recorded once).
    bool settle_early_data() noexcept;

    // http3_session.cpp: the HTTP/3 streams.
    bool setup_http3() noexcept;   // after the handshake: control and QPACK streams
    void open_streams() noexcept;  // pending slots get streams while the server allows
    Slot* slot_of(int64_t stream_id) noexcept;
    void release(Slot& s) noexcept;
    void complete(Slot& s) noexcept;

    const std::vector<H2Request>& requests_;
    std::vector<std::vector<nghttp3_nv>> nvs_;  // per template, pointing into requests_
    int streams_;
    bool one_per_connection_;
    Http3Options options_;
    SessionEvents& events_;
    std::vector<Slot> slots_;
    int used_ = 0;
    int started_ = 0;
    bool failed_ = false;
    bool closed_by_peer_ = false;  // CONNECTION_CLOSE received (draining)
    bool goaway_ = false;
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
    nghttp3_conn* h3_ = nullptr;
    ngtcp2_path_storage path_{};
    ngtcp2_connection_close_error last_error_{};
    mutable std::vector<uint8_t> packet_;
    mutable size_t packet_len_ = 0;
    mutable bool producing_ = false;
};

}  // namespace loadbench::generator
