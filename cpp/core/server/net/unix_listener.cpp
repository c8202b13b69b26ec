#include "core/server/net/unix_listener.hpp"

#include "core/server/net/listener.hpp"

#include <boost/asio/local/stream_protocol.hpp>

#include <cerrno>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

namespace loadbench::server {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

void UnixSocketFile::remove() noexcept {
    if (path_.empty()) return;
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) ::unlink(path_.c_str());
    path_.clear();
}

namespace {

// A socket file outlives a server that was killed. Whether one is still served is what a
// connect tells: refused means nobody accepts (stale, replaced); accepted, or a full queue
// (EAGAIN without blocking), means another server owns it.
void clear_stale_socket(const std::string& path, asio::io_context& io) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;  // nothing there (or nothing we could replace)
    if (!S_ISSOCK(st.st_mode)) throw StartError("cannot listen on unix:" + path + ": it exists and is not a socket");
    local::socket probe(io);
    boost::system::error_code ec;
    probe.open(local(), ec);
    if (!ec) probe.non_blocking(true, ec);
    if (!ec) probe.connect(local::endpoint(path), ec);
    if (ec != asio::error::connection_refused)
        throw StartError("cannot listen on unix:" + path + ": another server is listening there");
    ::unlink(path.c_str());
}

}  // namespace

asio::ip::tcp::acceptor open_unix_listener(const std::string& path, asio::io_context& io, UnixSocketFile& file) {
    clear_stale_socket(path, io);
    local::acceptor acceptor(io);
    boost::system::error_code ec;
    acceptor.open(local(), ec);
    if (!ec) acceptor.bind(local::endpoint(path), ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw StartError("cannot listen on unix:" + path + ": " + ec.message());
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) file = UnixSocketFile(path, st.st_dev, st.st_ino);
    const int fd = acceptor.release(ec);
    if (ec) throw StartError("cannot listen on unix:" + path + ": " + ec.message());
    asio::ip::tcp::acceptor adopted(io);
    adopted.assign(asio::ip::tcp::v4(), fd, ec);
    if (ec) {
        ::close(fd);
        file.remove();
        throw StartError("cannot listen on unix:" + path + ": " + ec.message());
    }
    return adopted;
}

}  // namespace loadbench::server
