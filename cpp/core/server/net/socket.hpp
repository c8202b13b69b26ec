#pragma once
// The socket type of every server connection.
//
// tcp::socket carries a type-erased any_io_executor (56 bytes); a socket bound to the
// io_context's own executor carries one pointer, 48 bytes less per connection (C10k memory:
// an idle plain connection costs ~500 bytes in all). An accepted connection becomes this type
// directly (AcceptedSocket::into_server_socket), so nothing is converted.
#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace loadbench::server {

using ServerSocket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

}  // namespace loadbench::server
