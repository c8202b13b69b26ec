#include "core/generator/engine.hpp"

#include <netdb.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/un.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "core/generator/sessions/http2_session.hpp"
#include "core/http/url.hpp"

namespace loadbench::generator {

namespace {

// Descriptors left for everything else in the process (Python, its files, the epoll fds).
constexpr int64_t kFdsReserved = 64;
constexpr int kMaxThreads = 1024;

int64_t seconds_to_ns(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }

std::string allowed_cpus_text(const cpu_set_t& set) {
    std::string out;
    for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) out += (out.empty() ? "" : ",") + std::to_string(i);
    return out;
}

// Most points a load shape may have: each stage keeps a latency histogram per worker.
constexpr size_t kMaxSchedulePoints = 100;

std::string seconds_text(double s) {
    char text[32];
    std::snprintf(text, sizeof text, "%g s", s);
    return text;
}

// A schedule's points (`name`: rate_schedule or connections_schedule, each a `what`): from 0 s,
// times never decreasing, values >= 0, something to do, and the window as long as the schedule
// (the Python layer sets duration from it).
void validate_points(const std::string& name, const std::string& what,
                     const std::vector<std::pair<double, double>>& points, const EngineConfig& c) {
    if (c.total_requests > 0)
        throw ConfigError("a " + name + " sets the run's length: give no request count (-n/--requests) with it");
    if (points.size() < 2)
        throw ConfigError(name + " needs at least two points (TIME:" + (what == "rate" ? "RATE" : "CONNECTIONS") +
                          "), e.g. '0s:10, 10s:100'");
    if (points.size() > kMaxSchedulePoints)
        throw ConfigError(name + " has " + std::to_string(points.size()) + " points; at most " +
                          std::to_string(kMaxSchedulePoints) + " (each stage keeps its own latency histogram)");
    for (size_t i = 0; i < points.size(); ++i) {
        const auto& [t, value] = points[i];
        const std::string which = name + " point " + std::to_string(i + 1) + " (" + seconds_text(t) + ")";
        if (!std::isfinite(t)) throw ConfigError(which + ": its time must be a finite number of seconds");
        if (!(value >= 0.0 && std::isfinite(value)))
            throw ConfigError(which + ": its " + what + " must be >= 0" +
                              (what == "rate" ? " requests per second" : ""));
        if (i == 0 && t != 0.0)
            throw ConfigError(name + " must start at 0s (the measured window's start), not at " + seconds_text(t));
        if (i > 0 && t < points[i - 1].first)
            throw ConfigError(which + " comes before point " + std::to_string(i) + " (" +
                              seconds_text(points[i - 1].first) + "): times must not decrease");
    }
    if (!(points.back().first > 0.0)) throw ConfigError(name + " must last longer than 0 s");
    if (RateCurve(points, 0.0).total() <= 0.0) throw ConfigError(name + " sends nothing: every " + what + " is 0");
    if (std::fabs(c.duration_s - points.back().first) > 1e-9)
        throw ConfigError(name + " lasts " + seconds_text(points.back().first) + " but the duration is " +
                          seconds_text(c.duration_s) + ": leave the duration out, the schedule sets it");
}

void validate_schedules(const EngineConfig& c) {
    if (!c.rate_schedule.empty()) {
        if (c.rate > 0.0) throw ConfigError("give either a rate or a rate schedule (rate_schedule, steps), not both");
        validate_points("rate_schedule", "rate", c.rate_schedule, c);
    }
    if (c.connections_schedule.empty()) return;
    if (c.rate > 0.0 || !c.rate_schedule.empty())
        throw ConfigError(
            "connections_schedule shapes the closed loop: give no rate or rate schedule with it (an open loop's "
            "connections follow its rate)");
    validate_points("connections_schedule", "connection count", c.connections_schedule, c);
    double most = 0.0;
    for (const auto& [t, n] : c.connections_schedule) {
        if (n != std::floor(n))
            throw ConfigError("connections_schedule point at " + seconds_text(t) +
                              ": a connection count must be a whole number");
        most = std::max(most, n);
    }
    if (static_cast<double>(c.connections) != most)
        throw ConfigError("connections (" + std::to_string(c.connections) +
                          ") must be the connections_schedule's most (" + std::to_string(static_cast<int64_t>(most)) +
                          "): those are the connections it activates");
    if (!c.keepalive)
        throw ConfigError(
            "connections_schedule needs keep-alive: it parks open connections, and without keep-alive a connection "
            "closes after each request");
}

void validate_http3(const EngineConfig& c);
void validate_early_data(const EngineConfig& c);

void validate(const EngineConfig& c) {
    if (c.connections < 1) throw ConfigError("connections must be >= 1 (got " + std::to_string(c.connections) + ")");
    if (c.threads < 1) throw ConfigError("threads must be >= 1 (got " + std::to_string(c.threads) + ")");
    // Every connection is a file descriptor: asking for more than the process may open would
    // turn into a storm of EMFILE connect errors (or, for absurd counts, an allocation failure).
    if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
        const auto most = static_cast<int64_t>(files.rlim_cur) - kFdsReserved;
        const int64_t wanted = std::max<int64_t>(c.connections, c.max_connections);  // open loop may grow
        if (wanted > most)
            throw ConfigError("connections (" + std::to_string(wanted) + ") exceeds what the open-file limit allows (" +
                              std::to_string(std::max<int64_t>(most, 0)) + " with ulimit -n " +
                              std::to_string(files.rlim_cur) + "): raise it with ulimit -n");
    }
    if (c.threads > kMaxThreads)
        throw ConfigError("threads must be <= " + std::to_string(kMaxThreads) + " (got " + std::to_string(c.threads) +
                          "): each is an event loop, more than the machine's cores only adds switching");
    if (c.threads > c.connections)
        throw ConfigError("threads (" + std::to_string(c.threads) + ") must not exceed connections (" +
                          std::to_string(c.connections) + "): every thread needs at least one connection");
    validate_schedules(c);  // before the duration they set
    if (c.total_requests < 0) throw ConfigError("requests must be an integer >= 1");
    if (c.total_requests == 0 && !(c.duration_s > 0.0 && std::isfinite(c.duration_s)))
        throw ConfigError("duration must be > 0 seconds");
    if (!(c.warmup_s >= 0.0 && std::isfinite(c.warmup_s))) throw ConfigError("warm-up must be >= 0 seconds");
    if (!(c.timeout_s > 0.0 && std::isfinite(c.timeout_s))) throw ConfigError("timeout must be > 0 seconds");
    if (!(c.interval_s > 0.0 && std::isfinite(c.interval_s)))
        throw ConfigError("timeline interval must be > 0 seconds");
    if (c.rate < 0.0 || !std::isfinite(c.rate)) throw ConfigError("rate must be > 0 requests per second");
    const bool open_loop = c.rate > 0.0 || !c.rate_schedule.empty();
    if (c.streams < 1) throw ConfigError("streams must be >= 1 (got " + std::to_string(c.streams) + ")");
    if (c.streams > 1 && !c.h2 && !c.h3)
        throw ConfigError(
            "streams > 1 needs HTTP/2 or HTTP/3 (protocol='h2' or 'h3', --h2 / --h3): HTTP/1.1 has no streams (its "
            "form is a pipeline, --pipeline)");
    validate_early_data(c);  // before HTTP/3's checks: without --h3 it is the one error to name
    if (c.h3) validate_http3(c);
    if (c.pipeline < 1) throw ConfigError("pipeline must be an integer >= 1 (got " + std::to_string(c.pipeline) + ")");
    if (c.h2_window_bits < 1 || c.h2_window_bits > 30)
        throw ConfigError("h2_window_bits must be from 1 to 30 (a window of 2^N - 1 bytes; got " +
                          std::to_string(c.h2_window_bits) + ")");
    if (c.pipeline > 1 && (c.h2 || c.h3))
        throw ConfigError(
            "pipeline > 1 is HTTP/1.1 pipelining: HTTP/2 and HTTP/3 carry concurrent requests as streams "
            "(streams, -p), not a pipeline");
    if (c.pipeline > 1 && !c.keepalive)
        throw ConfigError(
            "pipeline > 1 needs keep-alive: pipelined requests share one connection, and without keep-alive "
            "each connection carries one request");
    if (c.max_connections < 0) throw ConfigError("max_connections must be >= 0");
    if (open_loop && c.max_connections > 0 && c.max_connections < c.connections)
        throw ConfigError("max_connections must be an integer >= connections (" + std::to_string(c.connections) +
                          "), not " + std::to_string(c.max_connections));
    if (!open_loop && c.max_connections > 0) throw ConfigError("max_connections needs an open-loop rate");
    if (!(c.send_batch_s >= 0.0 && c.send_batch_s <= 1.0)) throw ConfigError("send_batch must be from 0 to 1 second");
    if (c.ack_with_request && open_loop)
        throw ConfigError(
            "ack_with_request needs a closed loop: an open-loop pool opens connections ahead of their "
            "requests, and the handshake's last ACK would wait for the delayed-ACK timer (40 ms)");
    if (!c.cpus.empty()) {
        cpu_set_t allowed;
        CPU_ZERO(&allowed);
        sched_getaffinity(0, sizeof allowed, &allowed);
        for (int cpu : c.cpus)
            if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed))
                throw ConfigError("CPU " + std::to_string(cpu) + " does not exist or is not available (available: " +
                                  allowed_cpus_text(allowed) + ")");
    }
}

// 0-RTT is HTTP/3's (QUIC early data) and rides on a resumed session.
void validate_early_data(const EngineConfig& c) {
    if (!c.quic_early_data) return;
    if (!c.h3)
        throw ConfigError(
            "0-RTT (quic_early_data, --h3-0rtt) is implemented for HTTP/3 only: add --h3 (protocol='h3')");
    if (!c.tls_session_resumption)
        throw ConfigError(
            "0-RTT (quic_early_data, --h3-0rtt) sends early data on a resumed session: it needs "
            "--tls-resume (tls_session_resumption=True)");
}

// HTTP/3 runs over QUIC: UDP, TLS 1.3 inside, no TCP options.
void validate_http3(const EngineConfig& c) {
    if (!http3_available())
        throw ConfigError(
            "HTTP/3 is not in this build: it needs ngtcp2 with its GnuTLS crypto library and nghttp3 (Debian: "
            "apt-get install libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev), then a "
            "rebuild");
    if (c.h2) throw ConfigError("choose one protocol: h2 or h3");
    if (!c.unix_socket.empty()) throw ConfigError("HTTP/3 runs over UDP: it cannot use a unix socket");
    if (c.ack_with_request || c.rst_close)
        throw ConfigError("ack_with_request and rst_close are TCP options: HTTP/3 runs over QUIC (UDP)");
    if (c.tls_library != "openssl")
        throw ConfigError("HTTP/3 uses GnuTLS (QUIC's TLS 1.3 through ngtcp2's crypto library): tls_library '" +
                          c.tls_library + "' applies to TCP TLS only");
}

// Resolve once. For a host name prefer IPv4 (what a server bound to 0.0.0.0 or 127.0.0.1
// answers); literals are used as given.
void resolve_tcp_address(RunPlan& plan) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = plan.url.host_is_ip_literal ? AI_NUMERICHOST : 0;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(plan.url.port);
    const int rc = getaddrinfo(plan.url.host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0 || !found) throw ConfigError("cannot resolve host '" + plan.url.host + "': " + gai_strerror(rc));
    const addrinfo* pick = found;
    for (const addrinfo* a = found; a; a = a->ai_next)
        if (a->ai_family == AF_INET) {
            pick = a;
            break;
        }
    std::memcpy(&plan.address, pick->ai_addr, pick->ai_addrlen);
    plan.address_len = static_cast<socklen_t>(pick->ai_addrlen);
    freeaddrinfo(found);
}

// The path is not checked here: a missing socket or nobody listening is what connecting finds
// out, counted as connect errors like a refused TCP port.
void set_unix_address(RunPlan& plan, const std::string& path) {
    sockaddr_un un{};
    if (path.find('\0') != std::string::npos) throw ConfigError("unix socket path has a NUL byte");
    if (path.size() >= sizeof un.sun_path)
        throw ConfigError("unix socket path '" + path + "' is longer than the " +
                          std::to_string(sizeof un.sun_path - 1) + " bytes an AF_UNIX address holds");
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, path.data(), path.size());
    std::memcpy(&plan.address, &un, sizeof un);
    plan.address_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
    plan.tcp = false;
}

}  // namespace

Engine::Engine(EngineConfig config) : config_(std::move(config)) {
    validate(config_);
    plan_.url = http::parse_url(config_.url);

    if (!config_.unix_socket.empty() && !plan_.url.unix_path.empty())
        throw ConfigError("give the unix socket once: a unix:PATH URL or unix_socket (--unix-socket), not both");
    const std::string& unix_path = config_.unix_socket.empty() ? plan_.url.unix_path : config_.unix_socket;
    if (unix_path.empty()) {
        resolve_tcp_address(plan_);
    } else {
        set_unix_address(plan_, unix_path);
        // These change TCP's packets, and a unix socket has none: refused rather than ignored,
        // so a result never claims an exchange that did not happen.
        if (config_.ack_with_request)
            throw ConfigError("ack_with_request is a TCP option: a unix socket has no handshake ACK");
        if (config_.rst_close) throw ConfigError("rst_close is a TCP option: a unix socket has no RST to close with");
    }

    std::vector<http::RequestTemplate> requests = config_.requests;
    if (requests.empty()) requests.emplace_back();
    const std::string host_header = plan_.url.host_header();
    for (const auto& r : requests) {
        plan_.wire_requests.push_back(http::serialize_request(r, plan_.url.target, host_header, config_.keepalive));
        plan_.head_requests.push_back(r.method == "HEAD");
    }

    if (config_.h3) {
        if (!plan_.url.tls)
            throw ConfigError(
                "HTTP/3 needs an https:// URL: QUIC always carries TLS 1.3 (there is no cleartext "
                "HTTP/3, unlike h2c)");
        if (!plan_.url.unix_path.empty()) throw ConfigError("HTTP/3 runs over UDP: it cannot use a unix socket");
        plan_.h3 = true;
        plan_.h3_verify = config_.tls_verify || !config_.tls_cacert.empty();
        for (const auto& r : requests)
            plan_.h2_requests.push_back(make_h2_request(r, plan_.url.target, host_header, true));
    }
    if (config_.h2) {
        plan_.h2 = true;
        for (const auto& r : requests)
            plan_.h2_requests.push_back(make_h2_request(r, plan_.url.target, host_header, plan_.url.tls));
    }
    if (plan_.url.tls && !plan_.h3) {  // HTTP/3's TLS is GnuTLS inside each QUIC connection
        tls_ = make_tls_context(config_.tls_library, config_.tls_verify, config_.tls_cacert,
                                config_.tls_session_resumption);
        if (config_.h2) {  // h2 only: never a silent fallback
            tls_->offer_alpn(std::string_view("\x02h2", 3));
            plan_.alpn = "h2";
            plan_.alpn_refused =
                "--h2 over TLS needs a server that speaks HTTP/2, and loadbench never falls back to HTTP/1.1";
        }
    }
    plan_.options = config_;
    plan_.tls = tls_.get();
    plan_.count_mode = config_.total_requests > 0;
    plan_.timeout_ns = seconds_to_ns(config_.timeout_s);
    plan_.connect_retry_delay_ns = seconds_to_ns(config_.connect_retry_delay_s);
    plan_.interval_ns = std::max<int64_t>(1, seconds_to_ns(config_.interval_s));
    // Outcomes of the drain after a timed window belong to the window's last interval.
    if (!plan_.count_mode)
        plan_.last_interval =
            std::max<int64_t>(0, static_cast<int64_t>(std::ceil(config_.duration_s / config_.interval_s - 1e-9)) - 1);
    plan_.open_loop = config_.rate > 0.0 || !config_.rate_schedule.empty();
    plan_.arrival = config_.poisson ? ArrivalSchedule::Kind::Poisson : ArrivalSchedule::Kind::Constant;
    plan_.rate_per_worker = config_.rate / config_.threads;
    if (!config_.rate_schedule.empty()) plan_.rate_curve = RateCurve(config_.rate_schedule, config_.warmup_s);
    if (!config_.connections_schedule.empty())
        plan_.connection_curve = RateCurve(config_.connections_schedule, config_.warmup_s);
    // A schedule's stages: each stretch between two of its times (the Recorder measures each).
    const auto& shape = config_.rate_schedule.empty() ? config_.connections_schedule : config_.rate_schedule;
    if (!shape.empty()) {
        plan_.stage_edges_ns.push_back(0);
        for (const auto& [t, value] : shape)
            if (t > 0.0 && seconds_to_ns(t) > plan_.stage_edges_ns.back())
                plan_.stage_edges_ns.push_back(seconds_to_ns(t));
    }
    plan_.send_batch_ns = seconds_to_ns(config_.send_batch_s);
    // TLS reads through its library (no receive time) and QUIC's datagrams carry their own
    // timers; a unix socket has no timestamps: those wake for every response as before.
    // A busy-polling loop never sleeps to batch its reads, but keeps timing responses by their
    // arrival in the kernel: a loop that falls behind (a burst, a preemption) must not make the
    // server look slow.
    plan_.busy_poll = plan_.open_loop && config_.busy_poll;
    plan_.batch_reads = plan_.open_loop && config_.batch_reads && plan_.tcp && !plan_.tls && !plan_.h3;
    const int max_connections = config_.max_connections > 0 ? config_.max_connections : config_.connections;

    // Connections and the request budget are split as evenly as possible; no shared counter.
    const int threads = config_.threads;
    for (int i = 0; i < threads; ++i) {
        const int conns = config_.connections / threads + (i < config_.connections % threads ? 1 : 0);
        int64_t budget = 0;
        if (plan_.count_mode)
            budget = config_.total_requests / threads + (i < config_.total_requests % threads ? 1 : 0);
        const int cpu = config_.cpus.empty() ? -1 : config_.cpus[static_cast<size_t>(i) % config_.cpus.size()];
        const int max_conns = max_connections / threads + (i < max_connections % threads ? 1 : 0);
        workers_.push_back(std::make_unique<Worker>(plan_, i, conns, std::max(conns, max_conns), budget, cpu));
    }
}

Engine::~Engine() {
    stop();
    join();
}

int Engine::preconnect(double timeout_s) {
    if (spawned_) return 0;
    plan_.preconnect_until_ns = monotonic_ns() + seconds_to_ns(timeout_s);
    spawn();
    int open = 0;
    for (auto& w : workers_) open += w->preconnected();
    return open;
}

void Engine::start() {
    if (started_) return;
    started_ = true;
    spawn();
    plan_.start_ns = monotonic_ns();
    plan_.window_start_ns = plan_.start_ns + seconds_to_ns(config_.warmup_s);
    plan_.window_end_ns = plan_.count_mode ? INT64_MAX : plan_.window_start_ns + seconds_to_ns(config_.duration_s);
    plan_.started.store(true);
    plan_.started.notify_all();
}

void Engine::spawn() {
    if (spawned_) return;
    spawned_ = true;
    running_ = static_cast<int>(workers_.size());
    for (auto& worker : workers_) {
        Worker* w = worker.get();
        threads_.emplace_back([this, w] {
            w->run(ready_count_);
            std::lock_guard lock(mutex_);
            if (--running_ == 0) {
                finished_.store(true);
                finished_cv_.notify_all();
            }
        });
    }
    // Start barrier: every worker has its event loop (and its pre-connected connections) before
    // the clock starts.
    for (int ready = ready_count_.load(); ready < static_cast<int>(workers_.size()); ready = ready_count_.load())
        ready_count_.wait(ready);
}

bool Engine::wait_for(double seconds) {
    std::unique_lock lock(mutex_);
    return finished_cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return running_ == 0; });
}

void Engine::stop() noexcept {
    if (!plan_.stop.exchange(true) && !finished_.load()) stop_requested_ns_.store(monotonic_ns());
    if (!plan_.started.load()) {
        plan_.started.store(true);  // release workers waiting at the barrier
        plan_.started.notify_all();
    }
}

void Engine::join() {
    if (joined_) return;
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    joined_ = true;
}

Progress Engine::progress() const {
    Progress p;
    p.finished = finished_.load();
    if (!plan_.started.load() || plan_.start_ns == 0) return p;
    const int64_t now = monotonic_ns();
    p.elapsed_s = static_cast<double>(now - plan_.start_ns) * 1e-9;
    p.warming_up = now < plan_.window_start_ns;
    for (const auto& w : workers_) {
        p.responses += w->live().responses.load(std::memory_order_relaxed);
        p.errors += w->live().errors.load(std::memory_order_relaxed);
        p.completed += w->live().completed.load(std::memory_order_relaxed);
    }
    return p;
}

RunResult Engine::result() {
    stop();
    join();
    RunResult r;
    r.threads = static_cast<int>(workers_.size());
    for (auto& w : workers_) {
        r.preconnected += w->preconnected();
        r.pool_size += w->pool_size();
    }
    r.interval_s = config_.interval_s;
    r.warmup_s = config_.warmup_s;
    r.open_loop = plan_.open_loop;
    r.target_rate = config_.rate;
    if (!plan_.rate_curve.empty() && config_.duration_s > 0.0)
        r.target_rate = (plan_.rate_curve.total() - plan_.rate_curve.integral_to(0.0)) / config_.duration_s;
    r.max_connections = config_.max_connections > 0 ? config_.max_connections : config_.connections;
    for (const auto& w : workers_)
        if (!w->setup_error().empty()) throw std::runtime_error(w->setup_error());

    const int64_t stopped_at = stop_requested_ns_.load();
    r.interrupted = stopped_at != 0;
    int64_t window_end;
    if (plan_.count_mode) {
        window_end = plan_.window_start_ns;
        for (const auto& w : workers_) window_end = std::max(window_end, w->last_outcome_ns());
        if (r.interrupted) window_end = std::max(window_end, stopped_at);
    } else {
        window_end = r.interrupted ? std::min(plan_.window_end_ns, stopped_at) : plan_.window_end_ns;
    }
    r.duration_s = std::max<double>(0.0, static_cast<double>(window_end - plan_.window_start_ns) * 1e-9);

    std::vector<std::vector<stats::IntervalSnapshot>> timelines;
    for (auto& w : workers_) {
        r.totals.add(w->measurements());
        r.cpu_s += w->cpu_s();
        timelines.push_back(std::move(w->timeline()));
    }
    if (plan_.h3) {
        const UdpDrops& before = workers_.front()->udp_drops_at_window_start();
        const UdpDrops after = read_udp_drops();
        r.udp_drops_measured = before.read && after.read;
        if (r.udp_drops_measured) {
            r.udp_in_errors = after.in_errors - before.in_errors;
            r.udp_rcvbuf_errors = after.rcvbuf_errors - before.rcvbuf_errors;
        }
    }
    const int64_t intervals = static_cast<int64_t>(std::ceil(r.duration_s / config_.interval_s - 1e-9));
    r.timeline = stats::merge_timeline(timelines, intervals);
    return r;
}

void Measurements::add(const Measurements& other) {
    latency_us.add(other.latency_us);
    latency_uncorrected_us.add(other.latency_uncorrected_us);
    lateness_us.add(other.lateness_us);
    loop_lateness_us.add(other.loop_lateness_us);
    for (size_t i = 0; i < phases_us.size(); ++i) phases_us[i].add(other.phases_us[i]);
#define LOADBENCH_ADD_COUNTER(name, doc) name += other.name;
    LOADBENCH_COUNTERS(LOADBENCH_ADD_COUNTER)
#undef LOADBENCH_ADD_COUNTER
    for (size_t i = 0; i < kGapBuckets; ++i) {
        due_gaps[i] += other.due_gaps[i];
        send_gaps[i] += other.send_gaps[i];
    }
    for (size_t i = 0; i < status_codes.size(); ++i) status_codes[i] += other.status_codes[i];
    for (size_t i = 0; i < errors.size(); ++i) errors[i] += other.errors[i];
    for (size_t i = 0; i < streams_reset.size(); ++i) streams_reset[i] += other.streams_reset[i];
    if (first_error.empty()) first_error = other.first_error;
    if (stages.size() < other.stages.size()) stages.resize(other.stages.size());
    for (size_t i = 0; i < other.stages.size(); ++i) stages[i].add(other.stages[i]);
    const auto smallest = [](uint64_t& mine, uint64_t theirs) {
        if (theirs != 0 && (mine == 0 || theirs < mine)) mine = theirs;
    };
    smallest(udp_receive_buffer, other.udp_receive_buffer);
    smallest(udp_send_buffer, other.udp_send_buffer);
    udp_gro = udp_gro || other.udp_gro;
}

void StageMeasurements::add(const StageMeasurements& other) {
    latency_us.add(other.latency_us);
    due += other.due;
    sends += other.sends;
    responses += other.responses;
    errors += other.errors;
    unfinished += other.unfinished;
}

bool http3_available() noexcept {
#ifdef LOADBENCH_HAVE_HTTP3
    return true;
#else
    return false;
#endif
}

}  // namespace loadbench::generator
