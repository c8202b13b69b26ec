#pragma once
// One client connection (h2load's Client, wrk's connection): a socket, its Transport (plain
// or TLS) and its Session. It connects, does the handshake, moves bytes between the transport
// and the session, and tells its owner what happened; what to send next, and what an outcome
// means, is the owner's business.
#include <cstdint>
#include <memory>
#include <string>

#include "core/generator/base/config.hpp"
#include "core/generator/loop/event_loop.hpp"
#include "core/generator/base/plan.hpp"
#include "core/generator/base/recorder.hpp"
#include "core/generator/sessions/session.hpp"
#include "core/generator/transports/transport.hpp"

namespace loadbench::generator {

class QuicTransport;  // quic_transport.hpp (needs ngtcp2: only in builds with HTTP/3)

class Connection;

class ConnectionEvents {
public:
    // TCP connected (before any TLS handshake).
    virtual void on_tcp_connected(Connection& c, int64_t now) noexcept = 0;
    // Handshake done: requests may flow.
    virtual void on_ready(Connection& c, int64_t now) = 0;
    virtual void on_response(Connection& c, Request& r, int status, int64_t now) noexcept = 0;
    // HTTP/2: a request the server refused unprocessed (send it again elsewhere), and one whose
    // stream alone failed. Called from inside the session's input: do not write from here.
    virtual void on_refused(Connection& c, Request& r, int64_t now) noexcept = 0;
    virtual void on_stream_error(Connection& c, Request& r, const std::string& why, int64_t now) noexcept = 0;
    // After input was handled and every request in flight was answered (the session may have
    // free slots, or may not be reusable).
    virtual void on_answered(Connection& c, int64_t now) = 0;
    // The connection failed and is closed; its session still holds the requests in flight.
    virtual void on_lost(Connection& c, ErrorKind kind, const std::string& why, int64_t now) = 0;
    // The server closed (or wrote to) a connection with nothing in flight; it is closed.
    virtual void on_idle_closed(Connection& c, int64_t now) = 0;
    // batch_reads: the connection holds part of a response (true) or no longer does (false).
    // While one does, the loop wakes for input: a response too large for the socket's receive
    // buffer must not wait for the next send to be read on.
    virtual void on_mid_response(bool mid) noexcept = 0;
    // batch_reads: whether the last read came with its arrival time. The kernel turns receive
    // timestamps on a few milliseconds after the first socket asks (deferred work), and a
    // read without one is timed when it is read: until they come, the loop must read at once.
    virtual void on_read_timed(bool timed) noexcept = 0;

protected:
    ~ConnectionEvents() = default;
};

class Connection final : public IoHandler, private TimerHandler, private SessionEvents {
public:
    enum class State : uint8_t { Closed, Connecting, Handshaking, Open };

    Connection(const RunPlan& plan, EventLoop& loop, Recorder& recorder, ConnectionEvents& owner, char* read_buffer,
               size_t read_capacity);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    State state() const noexcept { return state_; }
    Session& session() noexcept { return *session_; }
    // Its set-up ended in a TLS handshake - over TCP (its Transport's) or QUIC's own - and how:
    // resumed, what became of 0-RTT, and whether a counted request was on it then.
    bool handshakes() const noexcept { return quic_ != nullptr || transport_->needs_handshake(); }
    bool handshake_resumed() const noexcept;
    EarlyData early_data() const noexcept;
    bool counted_at_handshake() noexcept;
    // Its set-up phases (Recorder::connection_phase): how long TCP's connect took (-1 under QUIC,
    // which has none), and which handshake it did and since when (QUIC's from the socket's open).
    int64_t connect_took_ns() const noexcept { return quic_ ? -1 : connected_ns_ - opened_ns_; }
    Phase handshake_phase() const noexcept;
    int64_t handshake_started_ns() const noexcept { return quic_ ? opened_ns_ : connected_ns_; }
    // The TCP connection already carried a response (so a close before any byte of the next
    // one is the server's idle timeout, not an answer).
    bool reused() const noexcept { return reused_; }
    // Opened ahead of its first request (Worker::preconnect): like a kept-alive connection, the
    // server may have closed it while it waited, so a request it loses unanswered is sent again.
    void opened_ahead() noexcept { reused_ = true; }

    // Starts connecting; false (nothing left open) when the socket could not even be created.
    bool open(std::string& why) noexcept;
    void close() noexcept;
    // Writes what the session has to send. False: the connection was lost (owner notified).
    bool flush() noexcept;

    void on_io(uint32_t events) override;
    // QUIC (HTTP/3): when its timer fired (connection_datagram.cpp).
    void on_timer(int64_t now) noexcept override;

    // The owner's bookkeeping, kept here so it needs no side tables.
    int64_t retry_at_ns = 0;       // > 0: reconnect (closed loop: start a request) at this time
    bool in_ready_list = false;    // open loop: listed as having free slots
    bool pool_connecting = false;  // open loop: counted among connections on their way
    bool last_counted = false;     // the last response belonged to the window
    int slot = 0;                  // its place in the worker's pool (a connections schedule activates the first N)
    bool parked = false;           // closed loop: idle, open, beyond the connections schedule's count of the moment

private:
    void on_request_sent(Request& r, int64_t now) noexcept override;
    void on_response(Request& r, int status, int64_t now) noexcept override;
    void on_refused(Request& r, int64_t now) noexcept override;
    void on_stream_error(Request& r, const std::string& why, int64_t now) noexcept override;
    void on_goaway(int64_t now) noexcept override;
    void on_stream_reset(uint32_t error_code, int64_t now) noexcept override;
    void connect_done(uint32_t events);
    void handshake();
    void read_available();
    void lose(ErrorKind kind, const std::string& why);
    void quick_acks_again() noexcept;
    void set_mid_response(bool mid) noexcept;
    std::string io_error(const char* what) const;
    // QUIC (HTTP/3, connection_datagram.cpp): a connected UDP socket, the QUIC transport's own
    // handshake, and its timer in the same event loop.
    bool open_datagram(std::string& why) noexcept;
    void on_datagram_io(uint32_t events);
    bool flush_datagrams() noexcept;
    size_t gather_datagrams() noexcept;  // the next batch_ (a GSO run, or one datagram); its count
    int send_batch() noexcept;           // 1 sent, 0 would block (kept), -1 lost the connection
    int send_singly() noexcept;          // the batch without GSO, one send() per datagram
    void read_datagrams();
    void arm_timer() noexcept;
    void close_datagram() noexcept;
    ErrorKind datagram_error_kind(int err) const noexcept;

    const RunPlan& plan_;
    EventLoop& loop_;
    Recorder& recorder_;
    ConnectionEvents& owner_;
    std::unique_ptr<Transport> transport_;  // TCP or TLS over TCP (unused under QUIC)
    std::unique_ptr<QuicTransport> quic_;   // QUIC: a datagram socket instead (HTTP/3)
    std::unique_ptr<Session> session_;
    StreamSession* stream_ = nullptr;  // session_ framed on the TCP or TLS byte stream (null under QUIC)
    char* read_buffer_;
    size_t read_capacity_;
    int fd_ = -1;
    int64_t opened_ns_ = 0;     // when it began connecting (connect(), or QUIC's first packet made)
    int64_t connected_ns_ = 0;  // TCP: when the connection came up
    State state_ = State::Closed;
    bool reused_ = false;
    bool peer_closed_ = false;
    bool mid_response_ = false;   // batch_reads, HTTP/1.1: the last read ended inside a response
    bool delaying_acks_ = false;  // ack_with_request: quick-ACK mode still off (see quick_acks_again)
    uint64_t settled_ = 0;        // requests the session settled (answered, refused, failed): slots freed
    int timer_ = -1;              // QUIC: the loop's timer, from the first open for the connection's life
    bool announce_open_ = false;  // QUIC: on_tcp_connected is due with the first packet
    bool gso_ = false;            // QUIC: send runs of equal-size datagrams with UDP GSO
    std::string batch_;           // datagrams gathered, not yet sent (kept across EAGAIN)
    size_t batch_count_ = 0;
    size_t batch_segment_ = 0;  // their size (the last one may be shorter)
    bool gro_ = false;          // QUIC: UDP_GRO is on (recvmsg may return several)
};

}  // namespace loadbench::generator
