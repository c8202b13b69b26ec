#include "core/server/server.hpp"

#include "core/server/tls_context.hpp"
#include "core/server/worker.hpp"

#include <boost/asio/ssl/context.hpp>

#include <condition_variable>
#include <mutex>

namespace loadbench::server {

namespace asio = boost::asio;

// Workers report here as their event loops end, so wait_for() can time out cleanly.
struct Server::Completion {
    std::mutex mutex;
    std::condition_variable done;
    std::size_t finished = 0;
};

Server::Server(ServerConfig config) : config_(std::move(config)) { validate(config_); }

Server::~Server() {
    if (started_ && !joined_) stop();
}

void Server::start() {
    if (started_) throw StartError("server already started");
    const auto address = resolve_host(config_.host);
    if (config_.serve_https) {
        try {
            tls_context_ = make_tls_context(config_);
        } catch (const std::runtime_error& e) {
            throw StartError(e.what());
        }
    }
    for (unsigned i = 0; i < config_.workers; ++i) {
        workers_.push_back(std::make_unique<Worker>(config_, i, tls_context_.get()));
    }
    std::vector<asio::io_context*> contexts;
    std::vector<Worker*> all_workers;
    for (auto& w : workers_) {
        contexts.push_back(&w->io());
        all_workers.push_back(w.get());
    }
    const bool reuseport = config_.accept == AcceptStrategy::reuseport;
    auto listen = [&](std::uint16_t port, bool tls) -> std::uint16_t {
        auto acceptors = open_listeners(address, port, reuseport, contexts);
        const auto bound = acceptors.front().local_endpoint().port();
        if (reuseport) {
            for (std::size_t i = 0; i < acceptors.size(); ++i) {
                workers_[i]->add_listener(std::move(acceptors[i]), tls, {workers_[i].get()});
            }
        } else {
            workers_[0]->add_listener(std::move(acceptors[0]), tls, all_workers);
        }
        return bound;
    };
    try {
        if (config_.serve_http) http_port_ = listen(config_.http_port, false);
        if (config_.serve_https) https_port_ = listen(config_.https_port, true);
    } catch (...) {
        workers_.clear();
        http_port_.reset();
        https_port_.reset();
        throw;
    }
    completion_ = std::make_shared<Completion>();
    for (auto& w : workers_) {
        threads_.emplace_back([worker = w.get(), completion = completion_] {
            worker->run();
            std::lock_guard lock(completion->mutex);
            completion->finished += 1;
            completion->done.notify_all();
        });
    }
    started_ = true;
}

void Server::request_stop() {
    for (auto& w : workers_) w->request_stop();
}

bool Server::wait_for(std::chrono::milliseconds timeout) {
    if (!started_ || joined_) return true;
    {
        std::unique_lock lock(completion_->mutex);
        if (!completion_->done.wait_for(lock, timeout, [&] { return completion_->finished == threads_.size(); })) {
            return false;
        }
    }
    wait();
    return true;
}

void Server::wait() {
    if (!started_ || joined_) return;
    for (auto& t : threads_) t.join();
    threads_.clear();
    joined_ = true;
}

CountersSnapshot Server::counters() const {
    CountersSnapshot total;
    for (const auto& w : workers_) total += w->counters();
    return total;
}

}  // namespace loadbench::server
