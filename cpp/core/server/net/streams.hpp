#pragma once
// Plain TCP and TLS behind the same four calls, so one Connection template serves both.
#include "core/server/net/edge_read.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include <utility>

namespace loadbench::server {

class PlainStream {
public:
    static constexpr bool is_tls = false;
    PlainStream(ServerSocket socket, boost::asio::ssl::context*) : socket_(std::move(socket)) {}

    ReactiveSocket& tcp() { return socket_; }
    template <class Buffer, class Handler>
    void async_read_some(const Buffer& buffer, Handler&& handler) {
        socket_.async_read_some(buffer, std::forward<Handler>(handler));
    }
    template <class Buffer, class Handler>
    void async_write(const Buffer& buffer, Handler&& handler) {
        boost::asio::async_write(socket_, buffer, std::forward<Handler>(handler));
    }

private:
    ReactiveSocket socket_;
};

class TlsStream {
public:
    static constexpr bool is_tls = true;
    TlsStream(ServerSocket socket, boost::asio::ssl::context* context) : stream_(std::move(socket), *context) {}

    ServerSocket& tcp() { return stream_.next_layer(); }
    boost::asio::ssl::stream<ServerSocket>& tls() { return stream_; }
    template <class Buffer, class Handler>
    void async_read_some(const Buffer& buffer, Handler&& handler) {
        stream_.async_read_some(buffer, std::forward<Handler>(handler));
    }
    template <class Buffer, class Handler>
    void async_write(const Buffer& buffer, Handler&& handler) {
        boost::asio::async_write(stream_, buffer, std::forward<Handler>(handler));
    }

private:
    boost::asio::ssl::stream<ServerSocket> stream_;
};

}  // namespace loadbench::server
