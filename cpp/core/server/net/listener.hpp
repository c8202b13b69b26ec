#pragma once
// Listening sockets: resolve the host, bind (one socket per worker with SO_REUSEPORT, or a
// single shared one), and turn "address already in use" into one clear message.
#include "core/server/base/config.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace loadbench::server {

// Start-up failure the user can act on (port in use, bad host, unreadable certificate).
class StartError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

boost::asio::ip::address resolve_host(const std::string& host);

// Opens `contexts.size()` listening sockets sharing one port (SO_REUSEPORT), or one socket
// on contexts[0] when `reuseport` is false. Port 0 picks a free port; all share it.
std::vector<boost::asio::ip::tcp::acceptor> open_listeners(const boost::asio::ip::address& address, std::uint16_t port,
                                                           bool reuseport,
                                                           const std::vector<boost::asio::io_context*>& contexts);

// HTTP/3: one UDP socket per context, all bound to `port` with SO_REUSEPORT (the kernel keeps a
// client's 4-tuple on one of them; see h3_endpoint.hpp). "In use" is one clear StartError.
std::vector<boost::asio::ip::udp::socket> open_udp_sockets(const boost::asio::ip::address& address, std::uint16_t port,
                                                           const std::vector<boost::asio::io_context*>& contexts);

}  // namespace loadbench::server
