#include "core/generator/loop/connection.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/generator/quic/quic_transport.hpp"
#include "core/generator/sessions/session_factory.hpp"

namespace loadbench::generator {

Connection::Connection(const RunPlan& plan, EventLoop& loop, Recorder& recorder, ConnectionEvents& owner,
                       char* read_buffer, size_t read_capacity)
    : plan_(plan),
      loop_(loop),
      recorder_(recorder),
      owner_(owner),
      read_buffer_(read_buffer),
      read_capacity_(read_capacity) {
    transport_ =
        plan.tls ? plan.tls->make_transport(plan.url.host, plan.url.host_is_ip_literal) : make_plain_transport();
    SessionParts parts = make_session(plan, static_cast<SessionEvents&>(*this));
    quic_ = std::move(parts.quic);
    stream_ = parts.stream;
    session_ = std::move(parts.session);
}

Connection::~Connection() {
    close();
    if (timer_ >= 0) loop_.remove_timer(timer_);
    session_.reset();  // before the QUIC transport it rides on
}

bool Connection::handshake_resumed() const noexcept {
#ifdef LOADBENCH_HAVE_HTTP3
    if (quic_) return quic_->resumed();
#endif
    return transport_->resumed();
}

EarlyData Connection::early_data() const noexcept {
#ifdef LOADBENCH_HAVE_HTTP3
    if (quic_) return quic_->early_data();
#endif
    return EarlyData::NotAttempted;  // 0-RTT over TCP is not offered
}

bool Connection::counted_at_handshake() noexcept {
#ifdef LOADBENCH_HAVE_HTTP3
    if (quic_) return quic_->counted_at_handshake();
#endif
    return session_->carries_counted();  // the TLS handshake ends before any request goes out
}

Phase Connection::handshake_phase() const noexcept {
    const bool resumed = handshake_resumed();
    if (quic_) return resumed ? kPhase_quic_resume : kPhase_quic_full;
    return resumed ? kPhase_tls_resume : kPhase_tls_full;
}

bool Connection::open(std::string& why) noexcept {
    session_->reset();
#ifdef LOADBENCH_HAVE_HTTP3
    if (quic_) quic_->reset();  // a new QUIC connection (its kept session ticket stays)
#endif
    reused_ = false;
    peer_closed_ = false;
    delaying_acks_ = false;
    if (quic_) return open_datagram(why);
    const int fd = ::socket(plan_.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        why = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    if (plan_.tcp) {
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (plan_.options.ack_with_request) {  // TCP only (Engine refuses it for a unix socket)
        // Quick-ACK mode off before connect: the kernel delays the handshake's last ACK and sends
        // it on the first bytes written - the request or the ClientHello, written as soon as the
        // connect completes (closed loop only, see Engine). One packet fewer per connection, and
        // the server's kernel completes the connection and queues its first bytes at once (what
        // a server listening with TCP_DEFER_ACCEPT waits for). Its application sees no difference.
        const int zero = 0;
        ::setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof zero);
        delaying_acks_ = true;
    }
    // A unix socket connects (or fails: ENOENT, ECONNREFUSED, EAGAIN when its listen queue is
    // full) at once; the writable edge that follows completes it as it completes a TCP connect.
    opened_ns_ = monotonic_ns();
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&plan_.address), plan_.address_len) != 0 &&
        errno != EINPROGRESS) {
        why = std::string("connect: ") + std::strerror(errno);
        ::close(fd);
        return false;
    }
    if (!loop_.watch(fd, *this, why)) {
        ::close(fd);
        return false;
    }
    fd_ = fd;
    state_ = State::Connecting;
    return true;
}

// Quick-ACK mode off is the kernel's interactive (pingpong) mode: it would go on delaying every
// ACK by up to 40 ms, and a server that writes one response (or TLS flight) in pieces with
// Nagle's algorithm on waits for each ACK before its next piece. Once the handshake's last ACK
// has left with the first bytes, ACKs go out at once again.
void Connection::quick_acks_again() noexcept {
    delaying_acks_ = false;
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
}

void Connection::close() noexcept {
    if (fd_ >= 0 && quic_) close_datagram();
    if (fd_ >= 0) {
        transport_->detach();
        if (plan_.options.rst_close && peer_closed_) {
            // The server has closed its side (its FIN is here) and nothing more is wanted from
            // it: an abortive close sends one RST instead of our FIN and the server's last ACK,
            // and leaves no TIME_WAIT on the server's side. Its application closed its socket
            // already, so it never sees the reset. One the server still holds closes with FIN.
            const linger abortive{1, 0};
            ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abortive, sizeof abortive);
        }
        ::close(fd_);  // also removes it from the epoll set
        fd_ = -1;
    }
    state_ = State::Closed;
    peer_closed_ = false;
    set_mid_response(false);
}

void Connection::set_mid_response(bool mid) noexcept {
    if (mid == mid_response_) return;
    mid_response_ = mid;
    owner_.on_mid_response(mid);
}

void Connection::on_io(uint32_t events) {
    if (state_ != State::Closed && quic_) {
        on_datagram_io(events);
        return;
    }
    switch (state_) {
        case State::Closed:
            return;
        case State::Connecting:
            connect_done(events);
            return;
        case State::Handshaking:
            handshake();
            return;
        case State::Open:
            break;
    }
    peer_closed_ = events & (EPOLLRDHUP | EPOLLHUP);
    if ((events & EPOLLOUT) && !flush()) return;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read_available();
}

void Connection::connect_done(uint32_t events) {
    if (events & (EPOLLERR | EPOLLHUP)) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
        lose(kConnect, std::string("connect: ") + std::strerror(err ? err : ECONNREFUSED));
        return;
    }
    if (!(events & EPOLLOUT)) return;
    transport_->attach(fd_);
    if (plan_.batch_reads && !transport_->time_arrivals()) {
        lose(kConnect, io_error("setsockopt(SO_TIMESTAMPNS), which batch_reads needs"));
        return;
    }
    connected_ns_ = monotonic_ns();
    owner_.on_tcp_connected(*this, connected_ns_);
    if (transport_->needs_handshake()) {
        state_ = State::Handshaking;
        handshake();  // the ClientHello is out, with the handshake's last ACK
        if (delaying_acks_ && fd_ >= 0) quick_acks_again();
        return;
    }
    state_ = State::Open;
    owner_.on_ready(*this, monotonic_ns());
    if (session_->reads_when_idle()) flush();  // the HTTP/2 preface, even before a request
}

void Connection::handshake() {
    switch (transport_->handshake()) {
        case IoStatus::Ok:
            if (!plan_.alpn.empty() && transport_->alpn() != plan_.alpn) {
                const std::string selected(transport_->alpn());
                lose(kConnect, "ALPN: the server did not select " + plan_.alpn + " (" +
                                   (selected.empty() ? std::string("it selected no protocol")
                                                     : "it selected '" + selected + "'") +
                                   "); " + plan_.alpn_refused);
                return;
            }
            state_ = State::Open;
            owner_.on_ready(*this, monotonic_ns());
            if (session_->reads_when_idle()) flush();  // the HTTP/2 preface, even before a request
            return;
        case IoStatus::WantRead:
        case IoStatus::WantWrite:
            return;  // the edge-triggered registration reports the next step
        case IoStatus::Eof:
            lose(kConnect, "TLS handshake: the server closed the connection");
            return;
        case IoStatus::Error:
            lose(kConnect, "TLS handshake: " + transport_->last_error());
            return;
    }
}

bool Connection::flush() noexcept {
    if (quic_) return flush_datagrams();  // also while the QUIC handshake runs
    if (state_ != State::Open) return true;
    while (true) {
        const std::string_view out = stream_->output();
        if (out.empty()) return true;
        size_t n = 0;
        // Each request's send time is taken as its bytes are handed to the socket, per write
        // (not once per loop pass): the open loop's lateness and service time, and every
        // request's write and time-to-first-byte phases, run from it. Before the call, so the
        // server can never have started earlier than the send time.
        const int64_t handed_at = monotonic_ns();
        switch (transport_->write(out.data(), out.size(), n)) {
            case IoStatus::Ok:
                if (session_->carries_counted()) recorder_.bytes_written(n);
                stream_->wrote(n, handed_at);
                if (delaying_acks_) quick_acks_again();  // the request is out, with the last ACK
                break;
            case IoStatus::WantWrite:
            case IoStatus::WantRead:
                return true;
            case IoStatus::Eof:
            case IoStatus::Error:
                lose(kWrite, io_error("write"));
                return false;
        }
    }
}

void Connection::read_available() {
    const bool multiplexed = session_->reads_when_idle();
    if (session_->in_flight() == 0 && !multiplexed) {
        // Nothing asked. TLS 1.3 session tickets arrive after the handshake, so an idle TLS
        // connection is readable without anything for the session: the transport consumes
        // them (and the new-session callback keeps the ticket). Anything else is the server
        // closing an idle connection (or talking out of turn): close it.
        size_t n = 0;
        const IoStatus status = transport_->read(read_buffer_, read_capacity_, n);
        if (status == IoStatus::WantRead || status == IoStatus::WantWrite) return;
        if (status == IoStatus::Eof) peer_closed_ = true;
        close();
        owner_.on_idle_closed(*this, monotonic_ns());
        return;
    }
    const bool plain = !transport_->needs_handshake();
    const uint64_t settled_before = settled_;
    int64_t now = 0;
    while (true) {
        size_t n = 0;
        const IoStatus status = transport_->read(read_buffer_, read_capacity_, n);
        if (status == IoStatus::Ok) {
            now = monotonic_ns();
            if (session_->carries_counted()) recorder_.bytes_read(n);
            // batch_reads: the response ended when its bytes arrived, not when the loop came to
            // read them (never later than now: the clocks' offset is read per call).
            const int64_t arrived = plan_.batch_reads ? std::min(now, transport_->arrival_ns()) : 0;
            if (plan_.batch_reads) owner_.on_read_timed(arrived > 0);
            if (stream_->input(read_buffer_, n, arrived > 0 ? arrived : now) == InputResult::Error) {
                lose(kParse, session_->error());
                return;
            }
            // HTTP/1.1: nothing more to read once every request is answered, or once a response
            // ended the connection (the pipelined requests behind it will not be answered).
            if (!multiplexed && (session_->in_flight() == 0 || !session_->reusable())) break;
            // A short read drained the socket; the next arrival raises a new edge.
            if (plain && n < read_capacity_ && !peer_closed_) break;
            continue;
        }
        if (status == IoStatus::WantRead || status == IoStatus::WantWrite) break;
        if (status == IoStatus::Eof) {
            peer_closed_ = true;
            now = monotonic_ns();
            const bool idle = session_->in_flight() == 0;
            if (stream_->input_eof(now) == InputResult::Ok &&
                (session_->in_flight() == 0 || (!multiplexed && !session_->reusable()))) {
                if (multiplexed && idle && settled_ == settled_before) {
                    // HTTP/2 connection closed with nothing in flight (idle timeout, after GOAWAY).
                    close();
                    owner_.on_idle_closed(*this, now);
                    return;
                }
                break;
            }
            lose(kRead, session_->error());
            return;
        }
        lose(kRead, io_error("read"));
        return;
    }
    if (!multiplexed) {
        // batch_reads: bytes were read and a request is still unanswered - part of its response.
        if (plan_.batch_reads) set_mid_response(now != 0 && session_->in_flight() > 0 && state_ == State::Open);
        // Keep-alive: its one request was answered. Pipelined: responses freed slots for the
        // owner to refill, or one ended the connection and the owner sends what it still held
        // again on a fresh one.
        if (session_->in_flight() == 0 || !session_->reusable() || settled_ != settled_before)
            owner_.on_answered(*this, now);
        return;
    }
    // HTTP/2: what the session has to say back (SETTINGS ACK, WINDOW_UPDATE, PING ACK), then
    // the owner refills the slots that freed - at once, while other streams are in flight.
    if (state_ == State::Open && !flush()) return;
    if (now == 0) now = monotonic_ns();
    const bool freed = settled_ != settled_before;
    if (session_->in_flight() == 0 ? (freed || !session_->reusable())
                                   : (freed && session_->reusable() && session_->free_slots() > 0))
        owner_.on_answered(*this, now);
}

void Connection::lose(ErrorKind kind, const std::string& why) {
    close();
    owner_.on_lost(*this, kind, why, monotonic_ns());
}

std::string Connection::io_error(const char* what) const {
    const int err = errno;
    const std::string tls_error = transport_->last_error();
    return std::string(what) + ": " + (tls_error.empty() ? std::string(std::strerror(err)) : tls_error);
}

void Connection::on_request_sent(Request& r, int64_t now) noexcept { recorder_.sent(r, now); }

void Connection::on_refused(Request& r, int64_t now) noexcept {
    ++settled_;
    owner_.on_refused(*this, r, now);
}

void Connection::on_stream_error(Request& r, const std::string& why, int64_t now) noexcept {
    ++settled_;
    owner_.on_stream_error(*this, r, why, now);
}

void Connection::on_goaway(int64_t now) noexcept { recorder_.goaway(plan_.in_window(now)); }

void Connection::on_stream_reset(uint32_t error_code, int64_t now) noexcept {
    recorder_.stream_reset(error_code, plan_.in_window(now));
}

void Connection::on_response(Request& r, int status, int64_t now) noexcept {
    ++settled_;
    reused_ = true;
    last_counted = r.counted;
    owner_.on_response(*this, r, status, now);
}

}  // namespace loadbench::generator
