#pragma once
// The plain listener on an AF_UNIX socket (--unix PATH): the same request path as TCP without
// the loopback's TCP processing, and the socket file's life around the server's.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <string>

#include <sys/types.h>

namespace loadbench::server {

// The socket file a server bound. remove() unlinks it only while it is still that file (same
// device and inode), never one another server has put at the path since.
class UnixSocketFile {
public:
    UnixSocketFile() = default;
    UnixSocketFile(std::string path, dev_t device, ino_t inode)
        : path_(std::move(path)), device_(device), inode_(inode) {}
    void remove() noexcept;

private:
    std::string path_;
    dev_t device_ = 0;
    ino_t inode_ = 0;
};

// Binds and listens on `path` (on `io`). A socket file nobody accepts on (a server that did not
// stop cleanly) is replaced; a live one, or a path that is not a socket, is a StartError.
//
// Returned as a tcp::acceptor, with `file` set: the server's connection classes are Asio
// ip::tcp sockets (socket.hpp), and an AF_UNIX descriptor serves as one - a stream socket's
// reads, writes, shutdown, cancel and close never look at the protocol; only open, bind,
// connect and endpoint queries do, and nothing calls those on a listener or connection once
// it is bound. Accepting is AcceptLoop's accept4, family-blind too. TCP-only settings (the
// listener's TCP_NODELAY, SO_REUSEPORT) are simply never applied to it.
boost::asio::ip::tcp::acceptor open_unix_listener(const std::string& path, boost::asio::io_context& io,
                                                  UnixSocketFile& file);

}  // namespace loadbench::server
