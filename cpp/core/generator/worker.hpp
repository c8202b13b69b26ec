#pragma once
// One worker = one thread, one epoll loop, its share of the connections and its own recorder.
// Nothing on the request path is shared with other workers; the only cross-thread traffic is
// the stop flag (read) and the progress counters (written with relaxed stores).
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/generator/config.hpp"
#include "core/generator/schedule.hpp"
#include "core/generator/transport.hpp"
#include "core/http/url.hpp"
#include "core/stats/timeline.hpp"

namespace loadbench::generator {

// Everything the workers read; immutable once the start flag is raised.
struct RunPlan {
    sockaddr_storage address{};
    socklen_t address_len = 0;
    http::Url url;
    std::vector<std::string> wire_requests;  // serialised once
    std::vector<bool> head_requests;
    const TlsContext* tls = nullptr;         // null: plain TCP
    bool keepalive = true;
    bool count_mode = false;
    int64_t timeout_ns = 0;
    int64_t connect_retry_delay_ns = 0;
    int64_t interval_ns = 1'000'000'000;
    bool open_loop = false;
    ArrivalSchedule::Kind arrival = ArrivalSchedule::Kind::Constant;
    double rate_per_worker = 0.0;
    uint64_t seed = 1;
    int threads = 1;
    // Set by the engine before `started` is released.
    int64_t start_ns = 0;
    int64_t window_start_ns = 0;
    int64_t window_end_ns = INT64_MAX;       // INT64_MAX in count mode
    std::atomic<bool> started{false};
    std::atomic<bool> stop{false};
};

int64_t monotonic_ns() noexcept;

class Worker {
public:
    // connections: the initial pool; max_connections: how far an open-loop pool may grow.
    Worker(const RunPlan& plan, int index, int connections, int max_connections, int64_t budget, int cpu);
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    // Thread body: set up, report ready, wait for the start flag, run until the end.
    void run(std::atomic<int>& ready_count);

    // Valid after run() returned.
    Measurements& measurements() noexcept { return measured_; }
    std::vector<stats::IntervalSnapshot>& timeline() noexcept { return timeline_.snapshots(); }
    double cpu_s() const noexcept { return cpu_s_; }
    int64_t last_outcome_ns() const noexcept { return last_outcome_ns_; }
    const std::string& setup_error() const noexcept { return setup_error_; }

    // Progress, readable from any thread while running.
    struct alignas(64) Live {
        std::atomic<uint64_t> responses{0};
        std::atomic<uint64_t> errors{0};
    };
    const Live& live() const noexcept { return live_; }

private:
    struct Connection;

    void event(Connection& c, uint32_t events);
    void begin_attempt(Connection& c, int64_t now);
    void open_connection(Connection& c, int64_t now);
    void on_connected(Connection& c, uint32_t events);
    void do_handshake(Connection& c);
    void send_request(Connection& c);
    void continue_write(Connection& c);
    void on_readable(Connection& c);
    void on_closed_without_response(Connection& c, ErrorKind kind, const std::string& why);
    void complete_response(Connection& c, int64_t now);
    void fail(Connection& c, ErrorKind kind, const std::string& why);
    void close_connection(Connection& c) noexcept;
    void housekeeping(int64_t now);
    bool counted_outcome(Connection& c, int64_t now) noexcept;
    // Open loop: queue the requests that are due, hand them to idle connections, grow the pool.
    void release_due(int64_t now);
    void dispatch(int64_t now);
    void start_request(Connection& c, int64_t intended, int64_t now);
    void become_idle(Connection& c);
    void open_pool_connection(Connection& c, int64_t now);
    void fail_queued_request(const std::string& why, int64_t now);
    int64_t interval_of(int64_t now) const noexcept { return (now - plan_.window_start_ns) / plan_.interval_ns; }

    const RunPlan& plan_;
    int index_;
    int cpu_;
    int epoll_fd_ = -1;
    std::vector<std::unique_ptr<Connection>> connections_;
    int max_connections_;
    // Open loop state.
    std::optional<ArrivalSchedule> schedule_;
    bool schedule_done_ = false;      // count mode: every request of the budget is scheduled
    std::deque<int64_t> backlog_;     // intended send times waiting for a free connection
    std::vector<Connection*> idle_;   // connected and free (entries may be stale: checked on pop)
    int connecting_ = 0;              // pool connections on their way (connect / handshake / retry)
    int64_t budget_left_;              // count mode: attempts this worker may still start
    int64_t outstanding_counted_ = 0;  // count mode: started attempts without an outcome yet
    size_t next_request_ = 0;
    std::unique_ptr<char[]> read_buffer_;
    size_t read_capacity_ = 256 * 1024;

    Measurements measured_;
    stats::IntervalRecorder timeline_;
    Live live_;
    double cpu_s_ = 0.0;
    int64_t last_outcome_ns_ = 0;
    std::string setup_error_;
};

}  // namespace loadbench::generator
