#pragma once
// Accepting on one listening socket and starting an HTTP/1.1 connection (which may become
// HTTP/2: h1/connection.hpp sniffs) for each on a worker.
#include "core/server/net/accepted_socket.hpp"
#include "core/server/net/asio_internals.hpp"
#include "core/server/worker/worker.hpp"

#include <boost/asio/basic_socket.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <vector>

namespace loadbench::server {

// Runs on the owning worker's thread and sends connections to `targets` round-robin: {owner}
// with SO_REUSEPORT, every worker for a shared listener. Each connection costs one accept4
// (see accepted_socket.hpp for what this saves against Asio's async_accept).
//
// The listening socket is registered edge-triggered with Asio's reactor, so it is accepted
// from until accept4 finds the queue empty (EAGAIN): under load that one call is shared by
// every connection accepted in the same batch. The accept is a preallocated reactor
// operation (as EdgeRead; asio_internals.hpp) rather than Asio's async_wait, for two system
// calls' sake:
//  - async_wait re-arms the descriptor with an epoll_ctl(MOD) every time it waits;
//  - after a batch that ended in EAGAIN the operation tells the reactor "exhausted", so the
//    next one waits for the listener's next edge instead of trying accept4 at once (which
//    would find the queue still empty).
class AcceptLoop final : public WorkerService {
public:
    // `protocol`: what Asio is told the accepted sockets are (see open_unix_listener).
    AcceptLoop(Worker& owner, boost::asio::ip::tcp::acceptor acceptor, const boost::asio::ip::tcp& protocol, bool tls,
               std::vector<Worker*> targets);
    AcceptLoop(const AcceptLoop&) = delete;
    AcceptLoop& operator=(const AcceptLoop&) = delete;

    void start() override { accept_next(); }
    void begin_shutdown() override;  // closes the listening socket

private:
    // Accepts the next connection: completes in on_accepted(), or waits for the next edge.
    void accept_next();
    void on_accepted(const boost::system::error_code& ec, AcceptedSocket* sockets, std::size_t count);
    void hand_to_next_target(AcceptedSocket socket);
    void retry_later();

    // The listening socket, taken over from the acceptor that bound it (an acceptor's
    // reactor registration is private; a basic_socket's is reachable by a subclass).
    using Listening =
        RegisteredSocket<boost::asio::basic_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>>;

#if LOADBENCH_EDGE_READ
    class AcceptOp final : public ReactorOperation<AcceptOp> {
    public:
        explicit AcceptOp(AcceptLoop& loop) : loop_(loop) {}
        void start(Reactor& reactor, Listening& listening);

    private:
        friend class ReactorOperation<AcceptOp>;
        Progress perform(boost::system::error_code& ec);
        void on_complete(const boost::system::error_code& ec);
        void on_discarded();
        // Accepted per wake-up at most, before the worker serves its other sockets.
        static constexpr std::size_t max_batch = 16;
        AcceptLoop& loop_;
        int listen_fd_ = -1;
        AcceptedSocket accepted_[max_batch];
        std::size_t count_ = 0;
    };
#endif

    Worker& owner_;
    boost::asio::ip::tcp protocol_;  // v4 or v6, given once (not a getsockname per connection)
    Listening listening_;
    boost::asio::steady_timer retry_timer_;
    bool tls_;
    std::vector<Worker*> targets_;
    std::size_t next_target_ = 0;
#if LOADBENCH_EDGE_READ
    AcceptOp accept_op_{*this};
#endif
};

}  // namespace loadbench::server
