#include "core/server/accept_loop.hpp"

#include "core/server/h1/connection.hpp"

#include <boost/asio/post.hpp>

#include <chrono>
#include <utility>

namespace loadbench::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
// After a failed accept (e.g. out of file descriptors) wait before trying again: the
// connection stays queued, so trying at once would spin.
constexpr auto accept_retry_delay = std::chrono::milliseconds(50);

// On the worker's own thread: registers the socket with its reactor and starts a connection.
void start_connection(Worker& worker, AcceptedSocket accepted, const tcp& protocol, bool tls) {
    if (worker.stopping()) return;  // the accepted socket closes itself
    // TCP_NODELAY comes from the listener (bind_one): Linux accepted sockets inherit it.
    // Plain connections write synchronously first (see Connection::write_out): that needs
    // would_block from a full send buffer instead of a wait (the socket is non-blocking
    // from accept4; into_server_socket tells Asio so).
    boost::system::error_code ec;
    ServerSocket socket = std::move(accepted).into_server_socket(worker.io(), protocol, /*sync_writes=*/!tls, ec);
    if (ec) return;  // epoll_ctl failed (out of memory): drop the connection
    if (tls) {
        worker.add_connection(new Connection<TlsStream>(worker, std::move(socket), worker.tls_context()));
    } else {
        worker.add_connection(new Connection<PlainStream>(worker, std::move(socket), nullptr));
    }
}
}  // namespace

AcceptLoop::AcceptLoop(Worker& owner, tcp::acceptor acceptor, const tcp& protocol, bool tls,
                       std::vector<Worker*> targets)
    : owner_(owner),
      protocol_(protocol),
      listening_(owner.io(), protocol_, acceptor.release()),
      retry_timer_(owner.io()),
      tls_(tls),
      targets_(std::move(targets)) {
    // Accepting until the queue is empty needs accept4 to return EAGAIN then, not to block.
    // (Asio would set this with an ioctl at its first async operation; do it once here.)
    listening_.non_blocking(true);
}

void AcceptLoop::begin_shutdown() {
    boost::system::error_code ignored;
    listening_.close(ignored);  // a pending accept completes with operation_aborted
    retry_timer_.cancel();
}

// `sockets` were accepted (all usable, even when an error came after them).
void AcceptLoop::on_accepted(const boost::system::error_code& ec, AcceptedSocket* sockets, std::size_t count) {
    if (ec == asio::error::operation_aborted || !listening_.is_open()) return;  // closed: stopping
    for (std::size_t i = 0; i < count; ++i) hand_to_next_target(std::move(sockets[i]));
    if (ec) return retry_later();
    accept_next();
}

void AcceptLoop::hand_to_next_target(AcceptedSocket socket) {
    Worker* target = targets_[next_target_];
    next_target_ = (next_target_ + 1) % targets_.size();
    if (target == &owner_) {
        start_connection(*target, std::move(socket), protocol_, tls_);
    } else {
        // The target registers the socket with its own reactor, on its own thread.
        asio::post(target->io(), [target, protocol = protocol_, tls = tls_, s = std::move(socket)]() mutable {
            start_connection(*target, std::move(s), protocol, tls);
        });
    }
}

// Out of descriptors (EMFILE/ENFILE) or memory: the connection stays queued; try again later.
void AcceptLoop::retry_later() {
    retry_timer_.expires_after(accept_retry_delay);
    retry_timer_.async_wait([this](boost::system::error_code ec) {
        if (!ec && listening_.is_open()) accept_next();
    });
}

#if LOADBENCH_EDGE_READ

void AcceptLoop::accept_next() { accept_op_.start(owner_.reactor(), listening_); }

void AcceptLoop::AcceptOp::start(Reactor& reactor, Listening& listening) {
    listen_fd_ = listening.native_handle();
    // Speculative: accept4 right away; on EAGAIN the reactor keeps the operation and
    // performs it again on the listener's next edge.
    start_read(reactor, listening);
}

AcceptLoop::AcceptOp::Progress AcceptLoop::AcceptOp::perform(boost::system::error_code& ec) {
    count_ = 0;
    while (count_ < max_batch) {
        AcceptedSocket socket = AcceptedSocket::accept_one(listen_fd_, ec);
        if (ec) return Progress::done;  // with what was accepted before it
        if (!socket) return count_ == 0 ? Progress::would_block : Progress::done_and_drained;  // queue empty
        accepted_[count_++] = std::move(socket);
    }
    return Progress::done;  // the batch is full; more may be queued: the next start accepts at once
}

void AcceptLoop::AcceptOp::on_complete(const boost::system::error_code& ec) {
    const std::size_t count = std::exchange(count_, 0);
    loop_.on_accepted(ec, accepted_, count);
}

// The io_context is being destroyed with the operation queued: no handler may run.
void AcceptLoop::AcceptOp::on_discarded() {
    const std::size_t count = std::exchange(count_, 0);
    for (std::size_t i = 0; i < count; ++i) accepted_[i].close();
}

#else  // Another Boost: accept4 directly, async_wait for the next edge (an epoll_ctl MOD each).

void AcceptLoop::accept_next() {
    boost::system::error_code ec;
    AcceptedSocket socket = AcceptedSocket::accept_one(listening_.native_handle(), ec);
    if (ec || socket) {
        // Posted, not called: a long queue must not recurse, nor starve the other sockets.
        asio::post(owner_.io(), [this, ec, s = std::move(socket)]() mutable { on_accepted(ec, &s, s ? 1 : 0); });
        return;
    }
    listening_.async_wait(Listening::wait_read, [this](boost::system::error_code wait_ec) {
        if (wait_ec) return on_accepted(wait_ec, nullptr, 0);
        accept_next();
    });
}

#endif

}  // namespace loadbench::server
