#pragma once
// The Engine owns a run: it checks the configuration, resolves the target, serialises the
// requests, starts the workers behind a barrier, times warm-up and the measured window (after
// which each worker drains the window's requests, up to the timeout), stops them and merges
// what each measured. Callers poll it; it never calls back.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/generator/base/config.hpp"
#include "core/generator/transports/transport.hpp"
#include "core/generator/base/plan.hpp"
#include "core/generator/loop/worker.hpp"

namespace loadbench::generator {

class Engine {
public:
    // Throws ConfigError for anything the user got wrong (URL, counts, CPUs, CA file, ...).
    explicit Engine(EngineConfig config);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Opens every connection (and finishes its TLS handshake) and returns, the clock not started:
    // start() then begins the window on open connections (a distributed shard does this before
    // its start instant, so the window does not measure connection setup). Waits at most
    // `timeout_s`; a connection not open by then, or refused, is opened again at the start as
    // usual. Returns how many are open. Call once, before start().
    int preconnect(double timeout_s);
    void start();
    // Waits up to `seconds`; true once every worker has finished.
    bool wait_for(double seconds);
    // Ends the run early; what was measured so far is kept.
    void stop() noexcept;
    Progress progress() const;
    // Joins the workers and merges their figures (call after wait_for returned true or stop()).
    RunResult result();

    const EngineConfig& config() const noexcept { return config_; }

private:
    void join();
    // Starts the worker threads and waits until each has set up (and pre-connected, when asked).
    void spawn();

    EngineConfig config_;
    RunPlan plan_;
    std::unique_ptr<TlsContext> tls_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<std::thread> threads_;
    std::atomic<int> ready_count_{0};
    std::mutex mutex_;
    std::condition_variable finished_cv_;
    int running_ = 0;
    bool spawned_ = false;
    bool started_ = false;
    bool joined_ = false;
    std::atomic<int64_t> stop_requested_ns_{0};
    std::atomic<bool> finished_{false};
};

// Whether this build has HTTP/3 (ngtcp2 + GnuTLS + nghttp3 were found): EngineConfig::h3.
bool http3_available() noexcept;

}  // namespace loadbench::generator
