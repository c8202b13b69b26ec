#pragma once
// A connection fresh from the listen queue, accepted by us rather than by Asio.
//
// Asio's async_accept costs two system calls per connection that nginx does not make
// (measured with strace -c -f against nginx, wrk -H 'Connection: close'):
//  - it calls accept() without SOCK_NONBLOCK, so the socket needs an ioctl(FIONBIO) before
//    the first read or synchronous write;
//  - it hands the descriptor to the socket with assign(), which marks it "possible_dup"
//    (Asio cannot know it is not a dup() of another registered descriptor), so close() runs
//    an epoll_ctl(EPOLL_CTL_DEL) first; for a descriptor nobody duplicated, close() alone
//    removes it from the epoll set.
// accept4(SOCK_NONBLOCK | SOCK_CLOEXEC) makes the socket non-blocking (and close-on-exec) in
// the same call, and into_server_socket() tells Asio what is true of it: not a dup, and
// already non-blocking (RegisteredSocket::mark_accepted, an Asio internal: asio_internals.hpp). What remains per
// connection is what nginx makes: accept4, epoll_ctl(ADD), recv, send, close (AcceptLoop shares the accept4 that finds
// the queue empty among a batch; Connection::start waits for the first edge instead of a recv that would find nothing).
#include "core/server/net/socket.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <utility>

namespace loadbench::server {

// Owns an accepted descriptor until it becomes a ServerSocket; closes it if it never does
// (e.g. the target worker's io_context is destroyed before a posted hand-over runs).
class AcceptedSocket {
public:
    AcceptedSocket() = default;
    ~AcceptedSocket() { close(); }
    AcceptedSocket(AcceptedSocket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    AcceptedSocket& operator=(AcceptedSocket&& other) noexcept {
        if (this != &other) {
            close();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    AcceptedSocket(const AcceptedSocket&) = delete;
    AcceptedSocket& operator=(const AcceptedSocket&) = delete;

    // One accept4 on a listening socket. An empty result with no error: the queue was empty
    // (EAGAIN). Connections reset while queued (ECONNABORTED) are skipped, EINTR retried.
    static AcceptedSocket accept_one(int listen_fd, boost::system::error_code& ec);

    explicit operator bool() const { return fd_ >= 0; }
    int native_handle() const { return fd_; }
    void close();

    // Registers the descriptor with `io`'s reactor (one epoll_ctl ADD) and gives it up to the
    // socket. `sync_writes`: the connection writes synchronously first and needs would_block
    // back instead of Asio waiting (plain TCP; see Connection::write_out).
    ServerSocket into_server_socket(boost::asio::io_context& io, const boost::asio::ip::tcp& protocol, bool sync_writes,
                                    boost::system::error_code& ec) &&;

private:
    explicit AcceptedSocket(int fd) : fd_(fd) {}
    int fd_ = -1;
};

}  // namespace loadbench::server
