#include "core/server/worker/worker.hpp"
#include "core/server/worker/connection_base.hpp"

#include <boost/asio/post.hpp>

namespace loadbench::server {

namespace asio = boost::asio;

namespace {
// Deadlines, the Date header and stop progress are checked this often.
constexpr auto tick_interval = std::chrono::milliseconds(100);
// Free buffers a worker keeps for reuse. One thread serves one connection at a time, so a
// few suffice for keep-alive load; more would only stay resident after a burst.
constexpr std::size_t buffers_kept = 16;
// A response buffer's first size (the routes' answers fit), and the largest kept for reuse.
constexpr std::size_t output_initial_capacity = 4096;
constexpr std::size_t output_max_kept_capacity = 64 * 1024;
}  // namespace

Worker::Worker(const ServerConfig& config, unsigned index, asio::ssl::context* tls_context)
    : config_(config),
      index_(index),
      tls_context_(tls_context),
      reactor_(reactor_of(io_)),
      tick_timer_(io_),
      context_(config),
      read_buffers_(read_buffer_size, buffers_kept),
      output_buffers_(output_initial_capacity, output_max_kept_capacity, buffers_kept) {}

Worker::~Worker() {
    // Only reached after run() returned or never ran: delete whatever is left.
    services_.clear();
    while (connections_) {
        ConnectionBase* c = connections_;
        connections_ = c->next_;
        delete c;
    }
}

void Worker::add_service(std::unique_ptr<WorkerService> service) { services_.push_back(std::move(service)); }

void Worker::run() {
    for (auto& service : services_) service->start();
    start_tick();
    io_.run();
}

void Worker::request_stop() {
    if (stop_requested_.exchange(true)) return;
    asio::post(io_, [this] { begin_stop(); });
}

void Worker::begin_stop() {
    context_.stopping = true;
    // Listeners close; an HTTP/3 endpoint's socket closes once its connections have.
    for (auto& service : services_) service->begin_shutdown();
    for (ConnectionBase* c = connections_; c != nullptr;) {
        ConnectionBase* next = c->next_;  // begin_shutdown may delete c
        c->begin_shutdown();
        c = next;
    }
    if (connection_count_ == 0) tick_timer_.cancel();
}

void Worker::start_tick() {
    tick_timer_.expires_after(tick_interval);
    tick_timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        on_tick();
    });
}

void Worker::on_tick() {
    context_.tick(clock::now());
    const clock::time_point now = context_.now;
    for (ConnectionBase* c = connections_; c != nullptr;) {
        ConnectionBase* next = c->next_;  // expire may delete c
        // Deadlines were set from now_, which lags the real clock by up to one tick; allowing
        // that tick means a timeout never fires early (it may fire up to two ticks late).
        // (Subtract from now: adding to no_deadline, time_point::max(), would overflow.)
        if (c->deadline() <= now - tick_interval) c->expire();
        c = next;
    }
    // Once stopping, the loop ends when the last connection is gone (run() returns).
    if (!(context_.stopping && connection_count_ == 0)) start_tick();
}

void Worker::link(ConnectionBase* connection) {
    connection->next_ = connections_;
    if (connections_) connections_->prev_ = connection;
    connections_ = connection;
    ++connection_count_;
}

void Worker::add_connection(ConnectionBase* connection) {
    link(connection);
    context_.counters.connection_opened();
    connection->start();
}

void Worker::hand_over(ConnectionBase* from, ConnectionBase* to) {
    from->handed_over_ = true;
    link(to);
}

void Worker::destroy(ConnectionBase* connection) {
    if (connection->prev_) {
        connection->prev_->next_ = connection->next_;
    } else {
        connections_ = connection->next_;
    }
    if (connection->next_) connection->next_->prev_ = connection->prev_;
    --connection_count_;
    if (!connection->handed_over_) context_.counters.connection_closed();
    delete connection;
    if (context_.stopping && connection_count_ == 0) tick_timer_.cancel();
}

}  // namespace loadbench::server
