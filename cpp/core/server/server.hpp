#pragma once
// The Beast reference server as a whole: workers, listeners (HTTP and/or HTTPS), TLS
// context, start/stop and counters. Used by the native binary and by loadbench._core.Server.
#include "core/server/base/config.hpp"
#include "core/server/base/counters.hpp"
#include "core/server/net/listener.hpp"
#include "core/server/net/unix_listener.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace boost::asio::ssl {
class context;
}

namespace loadbench::server {

class Http3Credentials;
class Worker;

class Server {
public:
    explicit Server(ServerConfig config);  // throws ConfigError
    ~Server();                             // stops gracefully and joins
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Binds every listener and starts the worker threads. Throws StartError (port in use,
    // bad host, unreadable certificate). Returns once the server accepts connections.
    void start();
    // Thread-safe, idempotent, non-blocking: stop accepting, close idle connections,
    // let in-flight responses finish.
    void request_stop();
    // Waits for the workers to finish; false if `timeout` passed first.
    bool wait_for(std::chrono::milliseconds timeout);
    void wait();
    void stop() {
        request_stop();
        wait();
    }

    bool running() const { return started_ && !joined_; }
    std::optional<std::uint16_t> http_port() const { return http_port_; }
    std::optional<std::uint16_t> https_port() const { return https_port_; }
    const ServerConfig& config() const { return config_; }
    CountersSnapshot counters() const;

private:
    ServerConfig config_;
    std::unique_ptr<boost::asio::ssl::context> tls_context_;
    std::unique_ptr<Http3Credentials> h3_credentials_;  // --h3 (outlives the workers)
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<std::thread> threads_;
    std::optional<std::uint16_t> http_port_;
    std::optional<std::uint16_t> https_port_;
    UnixSocketFile unix_file_;  // --unix: removed once the workers have stopped
    struct Completion;
    std::shared_ptr<Completion> completion_;
    bool started_ = false;
    bool joined_ = false;
};

}  // namespace loadbench::server
