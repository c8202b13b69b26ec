#pragma once
// The HTTP/3 half of the server: one QUIC connection (ngtcp2 0.12, GnuTLS crypto) carrying
// HTTP/3 (nghttp3 0.8), with no socket in it (like Http2Session). Datagrams from the client go
// in through receive(); the datagrams to send come out of flush() into a DatagramSink. This is
// the QUIC half; the HTTP/3 half - requests routed by the same protocol-neutral handler as
// HTTP/1.1 and HTTP/2, responses encoded as HEADERS plus DATA - is Http3Application
// (h3_application.hpp), made once the handshake is done.
//
// Limits, as HTTP/2's: initial_max_streams_bidi is --h2-max-streams (QUIC does the refusing: a
// client cannot open more, and one more is granted as each closes), --max-body (413, also from
// content-length before any DATA), --max-header (431), --idle-timeout-ms (QUIC's max_idle_timeout),
// --header-timeout-ms bounds the handshake and each request's header and trailer sections (a
// stream whose headers are late is reset with H3_REQUEST_INCOMPLETE; the connection goes on).
// Flow control is ngtcp2's: request data is consumed as it arrives, so the windows only pace
// the client.
//
// Graceful stop (begin_shutdown): a GOAWAY shutdown notice at once, the final GOAWAY (the last
// stream accepted) one PTO later, the streams in flight finish, then CONNECTION_CLOSE H3_NO_ERROR.
#include "core/server/app/handler_context.hpp"

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace loadbench::server {

class Http3Credentials;
class Http3Resumption;

// Where a session's datagrams go (the worker's UDP socket). send() false: the socket would
// block - the session keeps that datagram, stops producing, and offers it again at its next
// flush (the endpoint flushes again once the socket is writable).
class DatagramSink {
public:
    virtual ~DatagramSink() = default;
    virtual bool send(const sockaddr* to, socklen_t to_len, const std::uint8_t* data, std::size_t size) = 0;
};

// The connection ids a session answers to; the endpoint routes datagrams by them.
class ConnectionIdRouter {
public:
    virtual ~ConnectionIdRouter() = default;
    virtual void add_id(std::string_view id, class Http3Session* session) = 0;
    virtual void remove_id(std::string_view id) = 0;
};

// A datagram's connection ids and version, read before any session sees it.
struct DatagramHeader {
    std::string_view destination_id;
    bool initial = false;  // a client Initial that may open a new connection
};
// nullopt-like: false when the datagram is not a QUIC packet we can route (dropped).
bool read_datagram_header(const std::uint8_t* data, std::size_t size, DatagramHeader& header);

// Nanoseconds on the steady clock: ngtcp2's timestamps.
std::uint64_t quic_now();

class Http3Session {
public:
    static constexpr std::uint64_t never = UINT64_MAX;

    // A new connection from a client Initial in `data`. Check ok() before use.
    Http3Session(HandlerContext& context, Http3Credentials& credentials, ConnectionIdRouter& router,
                 const std::uint8_t* data, std::size_t size, const sockaddr* local, socklen_t local_len,
                 const sockaddr* remote, socklen_t remote_len, std::uint64_t now);
    ~Http3Session();
    Http3Session(const Http3Session&) = delete;
    Http3Session& operator=(const Http3Session&) = delete;

    bool ok() const;
    // A datagram for this connection (from `remote`).
    void receive(const std::uint8_t* data, std::size_t size, const sockaddr* local, socklen_t local_len,
                 const sockaddr* remote, socklen_t remote_len, std::uint64_t now);
    // Sends what is ready (packets, or the CONNECTION_CLOSE when the session ends).
    void flush(DatagramSink& sink, std::uint64_t now);
    // When on_timer() is due: QUIC's loss/ACK/idle timer, a /delay answer, the shutdown step.
    std::uint64_t next_wakeup() const;
    void on_timer(std::uint64_t now);
    // The server is stopping: GOAWAY, finish the streams in flight, CONNECTION_CLOSE.
    void begin_shutdown(std::uint64_t now);
    // Nothing more to send or receive: the endpoint deletes it.
    bool finished() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// TLS credentials for every HTTP/3 session of the server (shared by the workers: GnuTLS
// credentials are read-only once set up): --cert/--key, or the given self-signed PEM pair.
class Http3Credentials {
public:
    // Throws std::runtime_error with one clear message (the file and GnuTLS's reason).
    Http3Credentials(const std::string& cert_file, const std::string& key_file);
    Http3Credentials(std::string_view cert_pem, std::string_view key_pem, int /*from_memory*/);
    ~Http3Credentials();
    Http3Credentials(const Http3Credentials&) = delete;
    Http3Credentials& operator=(const Http3Credentials&) = delete;
    void* native() const { return native_; }  // gnutls_certificate_credentials_t
    // Session tickets (one key for the process, h3_resumption.hpp) and, with early_data, 0-RTT.
    // Before the workers start. Throws std::runtime_error with GnuTLS's reason.
    void enable_resumption(bool early_data);
    const Http3Resumption* resumption() const { return resumption_; }  // null: full handshakes only

private:
    void* native_ = nullptr;
    Http3Resumption* resumption_ = nullptr;  // owned
};

// Whether this build has HTTP/3 (ngtcp2, its GnuTLS crypto and nghttp3 were found), and if
// not, what to install.
bool http3_available();
std::string_view http3_missing_reason();

}  // namespace loadbench::server
