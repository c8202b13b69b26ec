#include "core/server/net/accepted_socket.hpp"

#include "core/server/net/asio_internals.hpp"

#include <cerrno>

#include <sys/socket.h>
#include <unistd.h>

namespace loadbench::server {

namespace asio = boost::asio;

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

ServerSocket AcceptedSocket::into_server_socket(asio::io_context& io, const asio::ip::tcp& protocol, bool sync_writes,
                                                boost::system::error_code& ec) && {
    RegisteredSocket<ServerSocket> socket(io);
    socket.assign(protocol, fd_, ec);  // the epoll_ctl ADD
    if (ec) return ServerSocket(io);   // fd_ still ours: closed by the destructor
    fd_ = -1;
    // assign() took it for a possible dup in blocking mode: tell Asio what accept4 made it.
    socket.mark_accepted(sync_writes, ec);
    return ServerSocket(std::move(socket));  // sliced: a RegisteredSocket adds no members
}

}  // namespace loadbench::server
