#pragma once
// Every Boost.Asio internal (boost::asio::detail) the server relies on, and nothing else: the
// rest of the server sees only Asio's public API and the names below, so a Boost upgrade
// checks and ports this one file.
//
// Why internals at all: Asio's public API makes system calls per connection and per request
// that nginx does not (measured with strace -c -f against nginx; reports/server-baseline.md).
// Each internal here removes some of them, and none changes what a client sees:
//  - ReactorOperation: a read or an accept preallocated by its owner (no allocation per
//    start) and started on the epoll reactor directly. After a short read or an accept4
//    that found the queue empty it reports the descriptor drained ("exhausted"), so the next
//    operation waits for the next epoll edge instead of trying a recv/accept4 that would find
//    nothing (EdgeRead: 0.56 recv per response at c=50; AcceptLoop), and waiting costs no
//    epoll_ctl(MOD) as async_wait does (edge_read.hpp, accept_loop.hpp).
//  - non_blocking_recv: Asio's own recv for those operations (EINTR retried, 0 bytes = eof).
//  - RegisteredSocket: reaches a socket's reactor registration (descriptor state), which
//    basic_socket keeps in a protected member; the operations above start on it.
//  - RegisteredSocket::mark_accepted: tells Asio what is true of a descriptor made by
//    accept4(SOCK_NONBLOCK) and given to no one (accepted_socket.hpp): it is non-blocking
//    already (else Asio's first operation sets it with an ioctl(FIONBIO)), and it is not a
//    dup (assign() assumes "possible_dup", which costs an epoll_ctl(EPOLL_CTL_DEL) before
//    every close; closing a descriptor nobody duplicated removes it from epoll by itself).
//  - Reactor / reactor_of: the io_context's reactor, which the operations are started on.
//
// Where an internal is not what this file was written against, the server uses the public
// API instead (the same behaviour for clients, more system calls per connection); either
// macro can be set to 0 (-D) to measure or test that fallback:
//  - LOADBENCH_EDGE_READ: the reactor operations. reactor::start_op() has the same signature
//    from Boost 1.74 to 1.82 (1.83 added immediate-completion arguments); without them reads
//    are async_read_some and the accept loop waits with async_wait.
//  - LOADBENCH_ACCEPT_STATE_FLAGS: the socket state flags, which live in the epoll/select
//    reactive socket service (not io_uring, not IOCP); without them an accepted socket is
//    told with non_blocking(true) (an ioctl) where it needs it.
// Both at 0, measured with strace -c -f (Boost 1.81, one worker, wrk -c10): 8.0 instead of
// 5.3 system calls per new connection (an ioctl, an epoll_ctl DEL, more epoll_wait) and 2.40
// instead of 2.10 per keep-alive response (a recv that finds nothing, 0.29 per response).
#include <boost/asio/io_context.hpp>
// After io_context.hpp: the reactor header needs the scheduler's declarations first.
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/socket_ops.hpp>
#include <boost/system/error_code.hpp>
#include <boost/version.hpp>
#include <cstddef>
#include <type_traits>
#include <utility>

#if !defined(LOADBENCH_EDGE_READ)
#if BOOST_VERSION >= 107400 && BOOST_VERSION < 108300 && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define LOADBENCH_EDGE_READ 1
#else
#define LOADBENCH_EDGE_READ 0
#endif
#endif

#if !defined(LOADBENCH_ACCEPT_STATE_FLAGS)
#if !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && !defined(BOOST_ASIO_HAS_IOCP)
#define LOADBENCH_ACCEPT_STATE_FLAGS 1
#else
#define LOADBENCH_ACCEPT_STATE_FLAGS 0
#endif
#endif

namespace loadbench::server {

static_assert(std::is_same_v<boost::asio::detail::socket_type, int>, "POSIX descriptors expected");

// The io_context's reactor (epoll). use_service takes a lock: look it up once per io_context.
using Reactor = boost::asio::detail::reactor;
inline Reactor& reactor_of(boost::asio::io_context& io) { return boost::asio::use_service<Reactor>(io); }

template <class Derived>
class ReactorOperation;

// `Socket` (a basic_socket or basic_stream_socket) with its reactor registration reachable.
// It adds no members: it can be moved into a plain `Socket` (sliced) at any time.
template <class Socket>
class RegisteredSocket : public Socket {
public:
    explicit RegisteredSocket(boost::asio::io_context& io) : Socket(io) {}
    explicit RegisteredSocket(Socket&& socket) : Socket(std::move(socket)) {}
    RegisteredSocket(boost::asio::io_context& io, const typename Socket::protocol_type& protocol, int descriptor)
        : Socket(io, protocol, descriptor) {}

    // Right after assign() of a descriptor made by accept4(SOCK_NONBLOCK | SOCK_CLOEXEC) and
    // given to no one: "not a dup" (close() needs no EPOLL_CTL_DEL) and "non-blocking" (no
    // FIONBIO). `sync_writes`: synchronous writes return would_block instead of waiting (as
    // after non_blocking(true)); otherwise only Asio's own operations know it is non-blocking.
    void mark_accepted(bool sync_writes, boost::system::error_code& ec) {
#if LOADBENCH_ACCEPT_STATE_FLAGS
        namespace ops = boost::asio::detail::socket_ops;
        ec.clear();
        registration().state_ =
            ops::stream_oriented | (sync_writes ? ops::user_set_non_blocking : ops::internal_non_blocking);
#else
        ec.clear();
        if (sync_writes) this->non_blocking(true, ec);  // an ioctl; Asio's first operation makes its own
#endif
    }

private:
    template <class Derived>
    friend class ReactorOperation;
    auto& registration() { return this->impl_.get_implementation(); }
};

// A reactor operation preallocated by its owner: starting it allocates nothing. Derived has
//   Progress perform(boost::system::error_code& ec);  // the descriptor may be ready: try once
//   void on_complete(const boost::system::error_code& ec);  // finished, failed or aborted
//   void on_discarded();  // the io_context was destroyed with the operation still queued
// perform() runs on the reactor's thread; an error it sets in `ec` reaches on_complete, as
// does operation_aborted when the socket is closed while the operation waits.
template <class Derived>
class ReactorOperation : private boost::asio::detail::reactor_op {
public:
    enum class Progress {
        would_block,  // nothing done: wait for the descriptor's next readiness
        done,
        done_and_drained,  // done, and the descriptor is empty: the next start waits for an edge
    };

    ReactorOperation(const ReactorOperation&) = delete;
    ReactorOperation& operator=(const ReactorOperation&) = delete;

protected:
    ReactorOperation()
        : reactor_op(boost::system::error_code(), &ReactorOperation::perform_op, &ReactorOperation::complete_op) {}
    ~ReactorOperation() = default;

    // Waits for `socket` to be readable, or (speculatively) performs at once: a continuation
    // of the caller's own work, so the reactor may run it without a round trip.
    template <class Socket>
    void start_read(Reactor& reactor, RegisteredSocket<Socket>& socket) {
        ec_ = boost::system::error_code();
        auto& registration = socket.registration();
        reactor.start_op(Reactor::read_op, registration.socket_, registration.reactor_data_, this,
                         /*is_continuation=*/true, /*allow_speculative=*/true);
    }

private:
    static Derived& derived(boost::asio::detail::operation* base) {
        return static_cast<Derived&>(static_cast<ReactorOperation&>(static_cast<reactor_op&>(*base)));
    }

    static status perform_op(reactor_op* base) {
        switch (derived(base).perform(base->ec_)) {
            case Progress::would_block:
                return not_done;
            case Progress::done:
                return done;
            case Progress::done_and_drained:
                return done_and_exhausted;
        }
        return done;
    }

    // owner is null when the io_context is destroyed with the operation still queued.
    static void complete_op(void* owner, boost::asio::detail::operation* base, const boost::system::error_code&,
                            std::size_t) {
        if (owner) {
            derived(base).on_complete(static_cast<reactor_op*>(base)->ec_);
        } else {
            derived(base).on_discarded();
        }
    }
};

// One recv on a non-blocking stream socket, as Asio's own reads make it: EINTR is retried,
// 0 bytes is error::eof. False when it would block (nothing read; `ec` is would_block).
inline bool non_blocking_recv(int descriptor, void* data, std::size_t size, boost::system::error_code& ec,
                              std::size_t& received) {
    return boost::asio::detail::socket_ops::non_blocking_recv1(descriptor, data, size, 0,
                                                               /*is_stream=*/true, ec, received);
}

}  // namespace loadbench::server
