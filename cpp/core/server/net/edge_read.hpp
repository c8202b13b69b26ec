#pragma once
// Reading a plain TCP socket the way nginx does under edge-triggered epoll.
//
// Asio's async_read_some always tries a recv() first ("speculative read") unless the last
// recv on that socket returned 0 bytes. After we answer a request, the client's next request
// is normally not there yet, so that first recv() fails with EAGAIN: measured, 0.56 wasted
// system calls per response at c=50 (2.63 calls/response against nginx's ~2.1). nginx skips
// the recv after a short read (fewer bytes than asked for: the socket was drained) and waits
// for the next epoll edge. This operation gives Asio's reactor the same hint: it reports a
// short read as "done and drained", which makes the reactor skip the speculative recv for
// the next read and wait for readiness instead. It is also preallocated per connection, so a
// read allocates nothing, and it takes its buffer only when the socket has bytes (nginx's
// idle connections hold no buffer either).
//
// It is a ReactorOperation, an Asio internal (asio_internals.hpp says which Boost versions
// have it); elsewhere LOADBENCH_EDGE_READ is 0 and connections use plain async_read_some.
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <utility>

#include "core/server/net/asio_internals.hpp"
#include "core/server/net/socket.hpp"

namespace loadbench::server {

// A ServerSocket that reactor operations can be started on.
using ReactiveSocket = RegisteredSocket<ServerSocket>;

#if LOADBENCH_EDGE_READ
// One read at a time into the target's buffer; completes with target.on_edge_read(ec, bytes).
template <class Target>
class EdgeRead final : public ReactorOperation<EdgeRead<Target>> {
public:
    using Progress = typename ReactorOperation<EdgeRead>::Progress;

    explicit EdgeRead(Target& target) : target_(target) {}

    // The buffer is not given here: perform() asks the target for one (read_buffer()) only
    // when it is about to recv, and tells it when the recv found nothing (read_would_block()),
    // so an idle connection waiting for its next request holds no buffer (see buffer_pool.hpp).
    // Not `speculative`: no recv until the reactor reports the socket readable. (Asio's own
    // non-speculative start re-arms the descriptor with an epoll_ctl MOD; instead the
    // operation is started speculatively and its first perform() declines without a recv.)
    void start(Reactor& reactor, ReactiveSocket& socket, bool speculative = true) {
        wait_for_edge_ = !speculative;
        received_ = 0;
        descriptor_ = socket.native_handle();
        this->start_read(reactor, socket);
    }

private:
    friend class ReactorOperation<EdgeRead>;

    Progress perform(boost::system::error_code& ec) {
        if (std::exchange(wait_for_edge_, false)) return Progress::would_block;
        const auto [data, size] = target_.read_buffer();
        if (!non_blocking_recv(descriptor_, data, size, ec, received_)) {
            target_.read_would_block();
            return Progress::would_block;
        }
        // A short read drained the socket: the next read should wait for the next edge.
        return received_ < size ? Progress::done_and_drained : Progress::done;
    }

    void on_complete(const boost::system::error_code& ec) { target_.on_edge_read(ec, received_); }
    void on_discarded() {}

    Target& target_;
    int descriptor_ = -1;
    std::size_t received_ = 0;
    bool wait_for_edge_ = false;
};
#endif

}  // namespace loadbench::server
