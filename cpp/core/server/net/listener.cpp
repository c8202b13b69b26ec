#include "core/server/net/listener.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstddef>

#include <sys/socket.h>

namespace loadbench::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// SO_REUSEPORT, for which Asio has no option: a SettableSocketOption of Asio's public API
// (the same setsockopt as Asio's own boolean options).
class ReusePort {
public:
    explicit ReusePort(bool enabled) : value_(enabled ? 1 : 0) {}
    template <class Protocol>
    int level(const Protocol&) const {
        return SOL_SOCKET;
    }
    template <class Protocol>
    int name(const Protocol&) const {
        return SO_REUSEPORT;
    }
    template <class Protocol>
    const int* data(const Protocol&) const {
        return &value_;
    }
    template <class Protocol>
    std::size_t size(const Protocol&) const {
        return sizeof(value_);
    }

private:
    int value_;
};

}  // namespace

asio::ip::address resolve_host(const std::string& host) {
    boost::system::error_code ec;
    auto address = asio::ip::make_address(host, ec);
    if (!ec) return address;
    // A name such as "localhost": take the first address it resolves to.
    asio::io_context io;
    tcp::resolver resolver(io);
    const auto results = resolver.resolve(host, "0", ec);
    if (ec || results.empty()) {
        throw StartError("cannot resolve --host '" + host + "': " + (ec ? ec.message() : "no address"));
    }
    return results.begin()->endpoint().address();
}

namespace {

std::string describe(const tcp::endpoint& endpoint) {
    const auto address = endpoint.address().to_string();
    return (endpoint.address().is_v6() ? "[" + address + "]" : address) + ":" + std::to_string(endpoint.port());
}

tcp::acceptor bind_one(asio::io_context& io, const tcp::endpoint& endpoint, bool reuseport, bool listen) {
    tcp::acceptor acceptor(io);
    boost::system::error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec && reuseport) acceptor.set_option(ReusePort(true), ec);
    // Linux copies TCP_NODELAY from the listening socket to every accepted one: set once here
    // instead of a setsockopt per connection (accept_loop.cpp: start_connection).
    if (!ec) acceptor.set_option(tcp::no_delay(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec && listen) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw StartError("cannot listen on " + describe(endpoint) + ": " + ec.message());
    return acceptor;
}

}  // namespace

std::vector<tcp::acceptor> open_listeners(const asio::ip::address& address, std::uint16_t port, bool reuseport,
                                          const std::vector<asio::io_context*>& contexts) {
    tcp::endpoint endpoint(address, port);
    std::vector<tcp::acceptor> acceptors;
    if (!reuseport) {
        acceptors.push_back(bind_one(*contexts.at(0), endpoint, false, true));
        return acceptors;
    }
    if (port != 0) {
        // SO_REUSEPORT would silently share a port another process (same user) already
        // listens on with SO_REUSEPORT; a plain bind first makes "in use" an error.
        bind_one(*contexts.at(0), endpoint, false, false).close();
    }
    for (asio::io_context* io : contexts) {
        acceptors.push_back(bind_one(*io, endpoint, true, true));
        endpoint.port(acceptors.front().local_endpoint().port());  // port 0: the rest join the first
    }
    return acceptors;
}

std::vector<asio::ip::udp::socket> open_udp_sockets(const asio::ip::address& address, std::uint16_t port,
                                                    const std::vector<asio::io_context*>& contexts) {
    using udp = asio::ip::udp;
    const udp::endpoint endpoint(address, port);
    std::vector<udp::socket> sockets;
    auto fail = [&](const boost::system::error_code& ec) {
        throw StartError("cannot listen for HTTP/3 on UDP " + describe(tcp::endpoint(address, port)) + ": " +
                         ec.message());
    };
    boost::system::error_code ec;
    {
        // As for TCP: a plain bind first, so a port another process holds is an error, not shared.
        udp::socket probe(*contexts.at(0));
        probe.open(endpoint.protocol(), ec);
        if (!ec) probe.bind(endpoint, ec);
        if (ec) fail(ec);
    }
    for (asio::io_context* io : contexts) {
        udp::socket socket(*io);
        socket.open(endpoint.protocol(), ec);
        if (!ec) socket.set_option(ReusePort(true), ec);
        if (!ec) socket.bind(endpoint, ec);
        if (ec) fail(ec);
        sockets.push_back(std::move(socket));
    }
    return sockets;
}

}  // namespace loadbench::server
