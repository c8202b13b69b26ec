// Connection over QUIC (HTTP/3): one connected, non-blocking UDP socket per connection, registered
// with the worker's event loop like a TCP socket; the QuicTransport does its own handshake; its
// timer (ngtcp2_conn_get_expiry) is one of the event loop's timers,
// armed again only when the expiry moves earlier. Receiving uses UDP GRO where the kernel has it: one
// recvmsg() may return several of the server's datagrams back to back (a sender's GSO batch),
// cut apart here by the segment size the kernel reports (LOADBENCH_UDP_GRO=0 turns it off).
// Sending gathers a run of equal-size datagrams (a request body, or several requests' worth)
// into one sendmsg() with UDP_SEGMENT (GSO) where the kernel takes it (LOADBENCH_UDP_GSO=0
// turns it off); a lone datagram goes with send().
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/generator/loop/connection.hpp"
#include "core/generator/quic/quic_transport.hpp"

#ifdef LOADBENCH_HAVE_HTTP3  // the build found ngtcp2, GnuTLS and nghttp3 (CMakeLists.txt)

namespace loadbench::generator {

namespace {

// Room in the kernel for a burst of the server's datagrams while the worker is busy elsewhere
// (the kernel drops what does not fit: RcvbufErrors), and for a burst of ours on the way out.
constexpr int kUdpBuffer = 4 << 20;

// SO_RCVBUFFORCE/SO_SNDBUFFORCE go past net.core.rmem_max/wmem_max where the process may
// (CAP_NET_ADMIN); elsewhere the plain option, which the kernel caps at those limits. Returns
// what the kernel granted (getsockopt: twice the size asked, the kernel's bookkeeping included).
uint64_t size_buffer(int fd, int forced, int plain) noexcept {
    if (::setsockopt(fd, SOL_SOCKET, forced, &kUdpBuffer, sizeof kUdpBuffer) != 0)
        (void)::setsockopt(fd, SOL_SOCKET, plain, &kUdpBuffer, sizeof kUdpBuffer);
    int granted = 0;
    socklen_t len = sizeof granted;
    return ::getsockopt(fd, SOL_SOCKET, plain, &granted, &len) == 0 && granted > 0 ? static_cast<uint64_t>(granted) : 0;
}

// UDP GRO unless LOADBENCH_UDP_GRO=0, and unless the kernel refused it once already (a kernel
// without it answers ENOPROTOOPT; the first refusal stops every later attempt, in any worker).
std::atomic<bool> gro_refused{false};

bool want_gro() noexcept {
    static const bool wanted = [] {
        const char* v = std::getenv("LOADBENCH_UDP_GRO");
        return v == nullptr || std::strcmp(v, "0") != 0;
    }();
    return wanted && !gro_refused.load(std::memory_order_relaxed);
}

bool enable_gro(int fd) noexcept {
    if (!want_gro()) return false;
    const int on = 1;
    if (::setsockopt(fd, IPPROTO_UDP, UDP_GRO, &on, sizeof on) == 0) return true;
    gro_refused.store(true, std::memory_order_relaxed);  // ENOPROTOOPT, EINVAL, EOPNOTSUPP: no GRO here
    return false;
}

// GSO: up to this many datagrams, this many bytes per sendmsg (the kernel's UDP_MAX_SEGMENTS, 64
// KiB of UDP payload).
constexpr size_t kGsoSegments = 64;
constexpr size_t kGsoBytes = 65000;
std::atomic<bool> gso_refused{false};

bool want_gso() noexcept {
    static const bool wanted = [] {
        const char* v = std::getenv("LOADBENCH_UDP_GSO");
        return v == nullptr || std::strcmp(v, "0") != 0;
    }();
    return wanted && !gso_refused.load(std::memory_order_relaxed);
}

}  // namespace

bool Connection::open_datagram(std::string& why) noexcept {
    if (timer_ < 0) timer_ = loop_.add_timer(static_cast<TimerHandler&>(*this));
    const int fd = ::socket(plan_.address.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        why = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    recorder_.udp_buffers(size_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF), size_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF));
    gro_ = enable_gro(fd);
    gso_ = want_gso();
    batch_.clear();
    batch_count_ = 0;
    recorder_.udp_gro(gro_);
    sockaddr_storage local{};
    socklen_t local_len = sizeof local;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&plan_.address), plan_.address_len) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) {
        why = std::string("connect (UDP): ") + std::strerror(errno);
        ::close(fd);
        return false;
    }
    if (!loop_.watch(fd, *this, why)) {
        ::close(fd);
        return false;
    }
    fd_ = fd;
    state_ = State::Handshaking;
    const int64_t now = monotonic_ns();
    opened_ns_ = now;
    if (!quic_->start(reinterpret_cast<const sockaddr*>(&local), local_len,
                      reinterpret_cast<const sockaddr*>(&plan_.address), plan_.address_len, now)) {
        why = quic_->error();
        close();
        return false;
    }
    // A UDP "connection" is only a path: it counts as opened when its first packet (the Initial)
    // leaves - by then the owner has given it its request, which says whether it is counted -
    // and its QUIC handshake counts as the TLS handshake of TCP (Worker::on_ready).
    announce_open_ = true;
    return true;  // the Initial goes out with the first flush (the owner flushes after submit)
}

void Connection::close_datagram() noexcept {
    // CONNECTION_CLOSE, so the server frees the connection now rather than at its idle timeout.
    const std::string_view bye = quic_->farewell(monotonic_ns());
    if (!bye.empty()) (void)::send(fd_, bye.data(), bye.size(), MSG_DONTWAIT);
    loop_.arm(timer_, INT64_MAX);
}

ErrorKind Connection::datagram_error_kind(int err) const noexcept {
    if (err == ECONNREFUSED || state_ != State::Open) return kConnect;
    return kRead;
}

void Connection::on_datagram_io(uint32_t events) {
    if (events & EPOLLERR) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            lose(datagram_error_kind(err),
                 err == ECONNREFUSED
                     ? std::string("QUIC: connection refused (ICMP port unreachable: nothing listens on that UDP port)")
                     : std::string("UDP: ") + std::strerror(err));
            return;
        }
    }
    if ((events & EPOLLOUT) && !flush_datagrams()) return;
    if (events & EPOLLIN) read_datagrams();
}

bool Connection::flush_datagrams() noexcept {
    if (fd_ < 0) return true;
    while (batch_count_ > 0 || gather_datagrams() > 0) {
        const int sent = send_batch();
        if (sent < 0) return false;
        if (sent == 0) break;  // the writable edge resumes it
    }
    if (quic_->broken()) {
        lose(state_ == State::Open ? kParse : kConnect, quic_->error());
        return false;
    }
    arm_timer();
    return true;
}

size_t Connection::gather_datagrams() noexcept {
    const int64_t handed_at = monotonic_ns();  // the requests' send and write phases run from it
    const size_t most = gso_ ? kGsoSegments : 1;
    while (batch_count_ < most) {
        const std::string_view out = quic_->output();
        if (out.empty()) break;
        // GSO cuts the buffer into equal segments, the last one possibly shorter: a longer
        // datagram, or one past 64 KiB, waits for the next batch.
        if (batch_count_ > 0 && (out.size() > batch_segment_ || batch_.size() + out.size() > kGsoBytes)) break;
        if (announce_open_) {
            announce_open_ = false;
            owner_.on_tcp_connected(*this, monotonic_ns());
        }
        if (batch_count_ == 0) batch_segment_ = out.size();
        batch_.append(out.data(), out.size());  // before wrote(): it frees the transport's datagram
        ++batch_count_;
        quic_->wrote(handed_at);
        if (out.size() < batch_segment_) break;
    }
    return batch_count_;
}

int Connection::send_batch() noexcept {
    while (true) {
        ssize_t n;
        if (batch_count_ > 1) {
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint16_t))] = {};
            iovec iov{batch_.data(), batch_.size()};
            msghdr msg{};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            cmsghdr* c = CMSG_FIRSTHDR(&msg);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            const auto segment = static_cast<uint16_t>(batch_segment_);
            std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
            n = ::sendmsg(fd_, &msg, 0);
        } else {
            n = ::send(fd_, batch_.data(), batch_.size(), 0);
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            const int err = errno;
            if (batch_count_ > 1 && (err == EIO || err == EINVAL || err == EOPNOTSUPP || err == ENOPROTOOPT)) {
                // No GSO on this path (a device without checksum offload: EIO): this batch goes
                // one datagram at a time, and no batch again in this run.
                gso_refused.store(true, std::memory_order_relaxed);
                gso_ = false;
                return send_singly();
            }
            lose(datagram_error_kind(err),
                 err == ECONNREFUSED
                     ? std::string("QUIC: connection refused (ICMP port unreachable: nothing listens on that UDP port)")
                     : std::string("send (UDP): ") + std::strerror(err));
            return -1;
        }
        const int64_t now = monotonic_ns();
        const bool counted = session_->carries_counted();
        recorder_.send_call(now);
        for (size_t at = 0; at < batch_.size(); at += batch_segment_)
            recorder_.datagram_sent(std::min(batch_segment_, batch_.size() - at), counted, now);
        batch_.clear();
        batch_count_ = 0;
        return 1;
    }
}

int Connection::send_singly() noexcept {
    const std::string batch = std::move(batch_);
    const size_t segment = batch_segment_;
    batch_.clear();
    batch_count_ = 0;
    for (size_t at = 0; at < batch.size(); at += segment) {
        batch_.assign(batch, at, segment);
        batch_segment_ = batch_.size();
        batch_count_ = 1;
        // what would block now is lost as on a congested path: QUIC's loss recovery resends it
        const int sent = send_batch();
        if (sent < 0) return -1;  // lost (and maybe reopened: nothing here is ours any more)
        if (sent == 0) {
            batch_.clear();
            batch_count_ = 0;
            return 0;
        }
    }
    return 1;
}

void Connection::read_datagrams() {
    const uint64_t settled_before = settled_;
    int64_t now = 0;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    while (true) {
        iovec iov{read_buffer_, read_capacity_};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        if (gro_) {
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
        }
        const ssize_t n = ::recvmsg(fd_, &msg, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            const int err = errno;
            lose(datagram_error_kind(err),
                 err == ECONNREFUSED
                     ? std::string("QUIC: connection refused (ICMP port unreachable: nothing listens on that UDP port)")
                     : std::string("recv (UDP): ") + std::strerror(err));
            return;
        }
        now = monotonic_ns();
        // GRO: the datagrams are `segment` bytes each, the last one possibly shorter.
        size_t segment = static_cast<size_t>(n);
        if (gro_) {
            for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
                    int size = 0;
                    std::memcpy(&size, CMSG_DATA(c), sizeof size);
                    if (size > 0) segment = static_cast<size_t>(size);
                }
            }
        }
        recorder_.receive_call(now);
        for (size_t at = 0; at < static_cast<size_t>(n); at += segment) {
            const size_t len = std::min(segment, static_cast<size_t>(n) - at);
            recorder_.datagram_received(len, session_->carries_counted(), now);
            if (quic_->input(read_buffer_ + at, len, now) == InputResult::Error) {
                // The server closing the connection (CONNECTION_CLOSE) with requests in flight is a
                // read error, as a TCP close is; what QUIC or HTTP/3 could not accept is a parse error.
                lose(state_ != State::Open ? kConnect : quic_->broken() ? kParse : kRead, quic_->error());
                return;
            }
            if (state_ == State::Closed) return;  // a callback of the owner closed it
        }
    }
    if (now == 0) now = monotonic_ns();
    if (state_ == State::Handshaking && quic_->established()) {
        state_ = State::Open;
        owner_.on_ready(*this, now);  // the closed loop flushes the requests waiting for it
        if (state_ == State::Closed) return;
    }
    // ACKs and what the requests waiting for the handshake have to send, then the owner
    // refills the slots that freed (as for HTTP/2).
    if (!flush_datagrams()) return;
    if (state_ != State::Open) return;
    const bool freed = settled_ != settled_before;
    if (session_->in_flight() == 0 ? (freed || !session_->reusable())
                                   : (freed && session_->reusable() && session_->free_slots() > 0))
        owner_.on_answered(*this, now);
}

void Connection::arm_timer() noexcept {
    const int64_t at = fd_ >= 0 ? quic_->expiry_ns() : INT64_MAX;
    // Armed again only when the expiry moves earlier: ngtcp2 moves it with nearly every packet
    // (ACK delay, loss detection, idle), mostly later, and each later arming would leave one more
    // stale entry in the loop's heap. A timer that fires early finds the expiry still ahead in
    // on_timer and is armed there.
    if (at >= loop_.armed_at(timer_)) return;
    loop_.arm(timer_, at);
}

void Connection::on_timer(int64_t now) noexcept {
    if (fd_ < 0 || state_ == State::Closed) return;
    if (quic_->expiry_ns() > now) {  // fired early: the expiry moved later meanwhile
        arm_timer();
        return;
    }
    if (quic_->on_expiry(now) == InputResult::Error) {
        if (state_ == State::Open && session_->in_flight() == 0) {  // idle timeout with nothing asked
            close();
            owner_.on_idle_closed(*this, now);
            return;
        }
        lose(state_ == State::Open ? kTimeout : kConnect, quic_->error());
        return;
    }
    flush_datagrams();  // retransmissions, ACKs, PINGs (a failure is settled through on_lost)
}

}  // namespace loadbench::generator

#else  // no QUIC in this build: the Connection never makes a QuicTransport, so none of this runs

namespace loadbench::generator {

bool Connection::open_datagram(std::string& why) noexcept {
    why = "this build has no HTTP/3";
    return false;
}
void Connection::close_datagram() noexcept {}
void Connection::on_datagram_io(uint32_t) {}
bool Connection::flush_datagrams() noexcept { return true; }
void Connection::on_timer(int64_t) noexcept {}

}  // namespace loadbench::generator

#endif  // LOADBENCH_HAVE_HTTP3
