#pragma once
// Reading a plain TCP socket the way nginx does under edge-triggered epoll.
//
// Asio's async_read_some always tries a recv() first ("speculative read") unless the last
// recv on that socket returned 0 bytes. After we answer a request, the client's next request
// is normally not there yet, so that first recv() fails with EAGAIN: measured, 0.56 wasted
// system calls per response at c=50 (2.63 calls/response against nginx's ~2.1). nginx skips
// the recv after a short read (fewer bytes than asked for: the socket was drained) and waits
// for the next epoll edge. This operation gives Asio's reactor the same hint: it reports a
// short read as "done and exhausted", which makes the reactor skip the speculative recv for
// the next read and wait for readiness instead. It is also preallocated per connection, so a
// read allocates nothing, and it takes its buffer only when the socket has bytes (nginx's
// idle connections hold no buffer either).
//
// It uses Asio's reactor interface (boost/asio/detail), which is not public API: its
// start_op() signature is the same from Boost 1.74 to 1.82 (1.83 added immediate-completion
// arguments). Other versions fall back to plain async_read_some (LOADBENCH_EDGE_READ = 0).
#include <boost/asio/io_context.hpp>
// After io_context.hpp: the reactor header needs the scheduler's declarations first.
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/socket_ops.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "core/server/socket.hpp"

#include <boost/version.hpp>

#include <cstddef>
#include <utility>

#if !defined(LOADBENCH_EDGE_READ)
#if BOOST_VERSION >= 107400 && BOOST_VERSION < 108300 && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define LOADBENCH_EDGE_READ 1
#else
#define LOADBENCH_EDGE_READ 0
#endif
#endif

namespace loadbench::server {

// A ServerSocket whose reactor registration (file descriptor, per-descriptor data) is reachable.
class ReactiveSocket : public ServerSocket {
public:
    explicit ReactiveSocket(ServerSocket&& socket) : ServerSocket(std::move(socket)) {}
    auto& implementation() { return impl_.get_implementation(); }
};

#if LOADBENCH_EDGE_READ
// One read at a time into the target's buffer; completes with target.on_edge_read(ec, bytes).
template <class Target>
class EdgeRead final : public boost::asio::detail::reactor_op {
public:
    using reactor = boost::asio::detail::reactor;

    explicit EdgeRead(Target& target)
        : reactor_op(boost::system::error_code(), &EdgeRead::perform, &EdgeRead::complete), target_(target) {}

    // The buffer is not given here: perform() asks the target for one (read_buffer()) only
    // when it is about to recv, and tells it when the recv found nothing (read_would_block()),
    // so an idle connection waiting for its next request holds no buffer (see buffer_pool.hpp).
    // Not `speculative`: no recv until the reactor reports the socket readable. (Asio's own
    // non-speculative start re-arms the descriptor with an epoll_ctl MOD; instead the
    // operation is started speculatively and its first perform() declines without a recv.)
    void start(reactor& reactor, ReactiveSocket& socket, bool speculative = true) {
        ec_ = boost::system::error_code();
        wait_for_edge_ = !speculative;
        bytes_transferred_ = 0;
        size_ = 0;
        auto& impl = socket.implementation();
        descriptor_ = impl.socket_;
        reactor.start_op(reactor::read_op, impl.socket_, impl.reactor_data_, this, /*is_continuation=*/true,
                         /*allow_speculative=*/true);
    }

private:
    static status perform(reactor_op* base) {
        auto* self = static_cast<EdgeRead*>(base);
        if (std::exchange(self->wait_for_edge_, false)) return not_done;
        const auto [data, size] = self->target_.read_buffer();
        self->size_ = size;
        const bool finished = boost::asio::detail::socket_ops::non_blocking_recv1(
            self->descriptor_, data, size, 0, /*is_stream=*/true, self->ec_, self->bytes_transferred_);
        if (!finished) {
            self->target_.read_would_block();
            return not_done;
        }
        // A short read drained the socket: the next read should wait for the next edge.
        return self->bytes_transferred_ < self->size_ ? done_and_exhausted : done;
    }

    // owner is null when the io_context is destroyed with the operation still queued.
    static void complete(void* owner, boost::asio::detail::operation* base, const boost::system::error_code&,
                         std::size_t) {
        auto* self = static_cast<EdgeRead*>(base);
        if (owner) self->target_.on_edge_read(self->ec_, self->bytes_transferred_);
    }

    Target& target_;
    boost::asio::detail::socket_type descriptor_ = boost::asio::detail::invalid_socket;
    std::size_t size_ = 0;
    bool wait_for_edge_ = false;
};
#endif

}  // namespace loadbench::server
