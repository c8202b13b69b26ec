#include "core/server/accepted_socket.hpp"

#include <boost/asio/detail/socket_ops.hpp>

#include <cerrno>

#include <sys/socket.h>
#include <unistd.h>

namespace loadbench::server {

namespace asio = boost::asio;

// Asio's socket state flags live in its (non-public) reactive socket service: epoll and
// select reactors. With io_uring as the default backend the implementation differs; there
// the socket is told the plain way (an ioctl) instead.
#if !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && !defined(BOOST_ASIO_HAS_IOCP)
#define LOADBENCH_ACCEPT_STATE_FLAGS 1
#else
#define LOADBENCH_ACCEPT_STATE_FLAGS 0
#endif

namespace {

#if LOADBENCH_ACCEPT_STATE_FLAGS
// A ServerSocket whose state flags can be set. It adds no members: after set_state() it is
// sliced back to a ServerSocket by moving.
class StateSocket : public ServerSocket {
public:
    explicit StateSocket(asio::io_context& io) : ServerSocket(io) {}
    void set_state(bool sync_writes) {
        namespace ops = asio::detail::socket_ops;
        auto& impl = impl_.get_implementation();
        // assign() set stream_oriented | possible_dup. We made this descriptor with accept4
        // and gave it to no one: not a dup, so closing it removes it from epoll by itself
        // (no EPOLL_CTL_DEL). It is non-blocking already (SOCK_NONBLOCK), so no FIONBIO:
        // user_set_non_blocking also makes synchronous writes return would_block, as
        // non_blocking(true) would; internal_non_blocking is what Asio's first async
        // operation would otherwise set with an ioctl.
        impl.state_ = ops::stream_oriented | (sync_writes ? ops::user_set_non_blocking : ops::internal_non_blocking);
    }
};
#endif

}  // namespace

AcceptedSocket AcceptedSocket::accept_one(int listen_fd, boost::system::error_code& ec) {
    ec.clear();
    for (;;) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) return AcceptedSocket(fd);
        switch (errno) {
            case EAGAIN:
#if EWOULDBLOCK != EAGAIN
            case EWOULDBLOCK:
#endif
                return {};
            case EINTR:
            // The client gave up while its connection was queued (as Asio's accept, which
            // skips these unless enable_connection_aborted is set): take the next one.
            case ECONNABORTED:
            case EPROTO:
                continue;
            default:
                ec.assign(errno, boost::system::system_category());
                return {};
        }
    }
}

void AcceptedSocket::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

ServerSocket AcceptedSocket::into_server_socket(asio::io_context& io, const asio::ip::tcp& protocol,
                                                bool sync_writes, boost::system::error_code& ec) && {
#if LOADBENCH_ACCEPT_STATE_FLAGS
    StateSocket socket(io);
    socket.assign(protocol, fd_, ec);  // the epoll_ctl ADD
    if (ec) return ServerSocket(io);   // fd_ still ours: closed by the destructor
    fd_ = -1;
    socket.set_state(sync_writes);
    return ServerSocket(std::move(socket));
#else
    ServerSocket socket(io);
    socket.assign(protocol, fd_, ec);
    if (ec) return socket;
    fd_ = -1;
    if (sync_writes) socket.non_blocking(true, ec);
    return socket;
#endif
}

}  // namespace loadbench::server
