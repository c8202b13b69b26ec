#pragma once
// A Session speaks one protocol over one connection (the model is h2load's Session): it says
// how many request slots it has free, takes requests, hands their bytes to the connection and
// turns the bytes that come back into completed responses. `Http1Session` carries one request
// at a time (keep-alive) or a pipeline of them, answered in order; an HTTP/2 session carries
// one per stream, HTTP/3 one per QUIC stream. The load logic (the Scheduler and the Worker) only
// sees slots and Requests, so adding a protocol is adding a Session. What carries its bytes is
// the Connection's: TCP, TLS over TCP (Transport) or QUIC (QuicTransport, on whose streams
// HTTP/3 rides - the QUIC handshake, timers and 0-RTT are none of the Session's business).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/generator/base/request.hpp"

namespace loadbench::generator {

// What a session reports, as it happens (implemented by the connection that owns it).
class SessionEvents {
public:
    // The request's first byte went to the transport at `now` (r.sent_ns is set).
    virtual void on_request_sent(Request& r, int64_t now) noexcept = 0;
    // Its response is complete (to the last byte) at `now`; the slot is already free.
    virtual void on_response(Request& r, int status, int64_t now) noexcept = 0;
    // Multiplexed protocols (HTTP/2) only; the slot is already free in each case.
    // The server refused the request unprocessed (GOAWAY above it, RST_STREAM REFUSED_STREAM):
    // it may go out again on another connection.
    virtual void on_refused(Request&, int64_t) noexcept {}
    // This request alone failed (its stream was reset); the connection goes on.
    virtual void on_stream_error(Request&, const std::string&, int64_t) noexcept {}
    virtual void on_goaway(int64_t) noexcept {}
    virtual void on_stream_reset(uint32_t /*error_code*/, int64_t) noexcept {}

protected:
    ~SessionEvents() = default;
};

class Session {
public:
    virtual ~Session() = default;

    // A new transport connection: forget all framing state (requests in flight must have been
    // taken with take_in_flight first).
    virtual void reset() noexcept = 0;
    // Requests it can take now, and requests submitted and not yet answered.
    virtual int free_slots() const noexcept = 0;
    virtual int in_flight() const noexcept = 0;
    // Takes a request (needs free_slots() > 0); its bytes go out with the connection's next writes.
    virtual void submit(const Request& r) noexcept = 0;
    // Whether this connection may carry more requests (keep-alive, and every request fully
    // written before its response).
    virtual bool reusable() const noexcept = 0;
    // The earliest assigned_ns of the requests in flight (INT64_MAX: none), for timeouts.
    virtual int64_t oldest_assigned_ns() const noexcept = 0;
    // Whether a request in flight is counted (its bytes belong to the window).
    virtual bool carries_counted() const noexcept = 0;
    // Removes up to `capacity` requests in flight (all of them with capacity >= in_flight()),
    // for the caller to settle; answered[i]: a byte of its response had arrived (a request
    // without one never reached the server's handler and may be re-sent).
    virtual size_t take_in_flight(Request* out, bool* answered, size_t capacity) noexcept = 0;
    virtual const std::string& error() const noexcept = 0;
    // Whether the connection feeds it bytes with no request in flight (HTTP/2: SETTINGS, PING,
    // GOAWAY arrive any time), and tells the owner when slots free while others are in flight.
    virtual bool reads_when_idle() const noexcept { return false; }
    // Whether several requests submitted together leave in one write (HTTP/2's frames, an
    // HTTP/1.1 pipeline): the owner then submits them all and flushes once, as h2load and wrk.
    virtual bool gathers_writes() const noexcept { return false; }
    // Multiplexed sessions: removes up to `capacity` requests assigned at or before
    // `assigned_before` (their streams are cancelled; the connection goes on), for the caller
    // to settle as timeouts. Others time out with their connection (0 here).
    virtual size_t take_expired(int64_t /*assigned_before*/, Request* /*out*/, size_t /*capacity*/) noexcept {
        return 0;
    }
};

// A Session that frames its requests and responses on one byte stream - TCP, or TLS over TCP
// (HTTP/1.1, HTTP/2). HTTP/3's bytes ride QUIC's streams instead, inside the QuicTransport.
class StreamSession : public Session {
public:
    // The bytes waiting to be written (empty: nothing to write), and how many of them the
    // transport took at `now`.
    virtual std::string_view output() const noexcept = 0;
    virtual void wrote(size_t n, int64_t now) noexcept = 0;
    // Bytes from the transport, read at `now`; completed responses go to SessionEvents.
    // Error: the stream cannot be trusted any more (error() says why) - close the connection.
    virtual InputResult input(const char* data, size_t n, int64_t now) noexcept = 0;
    // The peer closed: a response delimited by the close completes, anything else is an Error.
    virtual InputResult input_eof(int64_t now) noexcept = 0;
};

}  // namespace loadbench::generator
