#include "core/server/server.hpp"

#include "core/server/accept_loop.hpp"
#include "core/server/h3/h3_endpoint.hpp"
#include "core/server/h3/h3_session.hpp"
#include "core/server/tls/tls_context.hpp"
#include "core/server/worker/worker.hpp"

#include <boost/asio/ssl/context.hpp>

#include <condition_variable>
#include <mutex>

namespace loadbench::server {

namespace asio = boost::asio;

namespace {
// A listening socket (on `owner`'s io_context) whose connections go to `targets` round-robin:
// just {owner} for SO_REUSEPORT, every worker for a shared listener.
void add_listener(Worker& owner, asio::ip::tcp::acceptor acceptor, const asio::ip::tcp& protocol, bool tls,
                  std::vector<Worker*> targets) {
    owner.add_service(std::make_unique<AcceptLoop>(owner, std::move(acceptor), protocol, tls, std::move(targets)));
}
}  // namespace

// Workers report here as their event loops end, so wait_for() can time out cleanly.
struct Server::Completion {
    std::mutex mutex;
    std::condition_variable done;
    std::size_t finished = 0;
};

Server::Server(ServerConfig config) : config_(std::move(config)) {
    validate(config_);
    if (config_.h3 && !http3_available()) throw ConfigError("--h3: " + std::string(http3_missing_reason()));
}

Server::~Server() {
    if (started_ && !joined_) stop();
}

void Server::start() {
    if (started_) throw StartError("server already started");
    const auto address = resolve_host(config_.host);
    if (config_.serve_https) {
        try {
            // HTTP/3 (GnuTLS) serves the same certificate as the TCP port (OpenSSL).
            std::optional<SelfSignedCertificate> generated;
            if (config_.h3 && config_.cert_file.empty()) generated = generate_self_signed_certificate();
            tls_context_ = make_tls_context(config_, generated ? &*generated : nullptr);
            if (config_.h3) {
                h3_credentials_ = generated ? std::make_unique<Http3Credentials>(generated->certificate_pem,
                                                                                 generated->private_key_pem, 1)
                                            : std::make_unique<Http3Credentials>(config_.cert_file, config_.key_file);
                if (config_.tls_resumption) h3_credentials_->enable_resumption(config_.h3_early_data);
            }
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
                const auto protocol = acceptors[i].local_endpoint().protocol();
                add_listener(*workers_[i], std::move(acceptors[i]), protocol, tls, {workers_[i].get()});
            }
        } else {
            const auto protocol = acceptors[0].local_endpoint().protocol();
            add_listener(*workers_[0], std::move(acceptors[0]), protocol, tls, all_workers);
        }
        return bound;
    };
    try {
        if (config_.serve_http && !config_.unix_path.empty()) {
            // One listener, its connections handed round-robin to every worker (as --accept shared).
            auto acceptor = open_unix_listener(config_.unix_path, workers_[0]->io(), unix_file_);
            add_listener(*workers_[0], std::move(acceptor), asio::ip::tcp::v4(), false, all_workers);
        } else if (config_.serve_http) {
            http_port_ = listen(config_.http_port, false);
        }
        if (config_.serve_https) https_port_ = listen(config_.https_port, true);
        if (config_.h3) {
            // Per-worker UDP sockets whatever --accept says: there is no accept to share.
            auto sockets = open_udp_sockets(address, *https_port_, contexts);
            for (std::size_t i = 0; i < sockets.size(); ++i) {
                Worker& worker = *workers_[i];
                worker.context().advertise_http3(sockets[i].local_endpoint().port());
                worker.add_service(std::make_unique<Http3Endpoint>(worker.io(), std::move(sockets[i]), worker.context(),
                                                                   *h3_credentials_));
            }
        }
    } catch (...) {
        workers_.clear();
        unix_file_.remove();
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
    unix_file_.remove();
}

CountersSnapshot Server::counters() const {
    CountersSnapshot total;
    for (const auto& w : workers_) total += w->counters();
    return total;
}

}  // namespace loadbench::server
