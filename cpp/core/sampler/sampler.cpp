#include "core/sampler/sampler.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace loadbench::sampler {
namespace {

double monotonic_seconds() {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double thread_cpu_seconds() {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void add_counters(ProcessReadings& total, const ProcessReadings& part) {
    total.utime_ticks += part.utime_ticks;
    total.stime_ticks += part.stime_ticks;
    total.ctx_voluntary += part.ctx_voluntary;
    total.ctx_involuntary += part.ctx_involuntary;
}

}  // namespace

double clock_ticks_per_second() {
    static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    return ticks;
}

Sampler::Sampler(int pid, bool tree) : root_pid_(pid), tree_(tree) {
    file_buffer_.resize(8192);
    dir_buffer_.resize(32768);
    auto root = std::make_unique<TrackedProcess>();
    std::string why;
    if (!root->open(pid, why, file_buffer_)) throw std::invalid_argument(why);
    members_.push_back(std::move(root));
    if (tree_) scanner_ = std::make_unique<ProcessTreeScanner>();
    series_.reserve(1024);
}

Sampler::~Sampler() { stop(); }

void Sampler::discover_members_locked(int last_pid) {
    if (last_pid != 0 && last_pid == last_pid_at_scan_) {
        // No pid was allocated since the last listing, so no process can have joined the
        // tree: skip re-listing /proc (the bulk of a sample's cost on a quiet machine) and only
        // drop members that were re-parented out of it (their parent died).
        scanned_.clear();
        for (const auto& member : members_) scanned_.push_back(member->pid());
        for (bool shrank = true; shrank;) {
            shrank = false;
            for (auto it = scanned_.begin() + 1; it != scanned_.end(); ++it) {
                const auto& member = *std::find_if(members_.begin(), members_.end(),
                                                   [pid = *it](const auto& m) { return m->pid() == pid; });
                if (std::find(scanned_.begin(), scanned_.end(), member->parent_pid()) == scanned_.end()) {
                    scanned_.erase(it);
                    shrank = true;
                    break;
                }
            }
        }
    } else {
        // Learn the current parents of members (a member whose parent died was re-parented out).
        for (const auto& member : members_) scanner_->note_parent(member->pid(), member->parent_pid());
        scanner_->scan(root_pid_, scanned_, dir_buffer_, file_buffer_);
        last_pid_at_scan_ = last_pid;
        ++proc_listings_;
    }

    // Members no longer in the tree (exited or re-parented away) keep their counters.
    for (auto it = members_.begin() + 1; it != members_.end();) {
        if (std::find(scanned_.begin(), scanned_.end(), (*it)->pid()) != scanned_.end()) {
            ++it;
            continue;
        }
        add_counters(departed_, (*it)->readings());
        it = members_.erase(it);
    }
    for (const int pid : scanned_) {
        if (pid == root_pid_) continue;
        const bool known = std::any_of(members_.begin(), members_.end(),
                                       [pid](const auto& member) { return member->pid() == pid; });
        if (known) continue;
        auto member = std::make_unique<TrackedProcess>();
        std::string why;
        if (member->open(pid, why, file_buffer_)) members_.push_back(std::move(member));
    }
}

ProcessReadings Sampler::sum_members_locked(std::uint32_t& live) const {
    ProcessReadings total = departed_;
    live = 0;
    for (const auto& member : members_) {
        const ProcessReadings& r = member->readings();
        add_counters(total, r);
        total.rss_kib += r.rss_kib;
        total.rss_peak_kib += r.rss_peak_kib;
        total.fds += r.fds;
        total.threads += r.threads;
        ++live;
    }
    return total;
}

Sample Sampler::read_locked(std::vector<int>* pids) {
    Sample sample;
    sample.t = monotonic_seconds();
    sample.machine = machine_.read(file_buffer_);
    if (exited_) {
        Sample frozen = final_;
        frozen.t = sample.t;
        frozen.machine = sample.machine;
        if (pids) pids->clear();
        return frozen;
    }

    if (tree_) discover_members_locked(sample.machine.last_pid);
    bool root_exited = false;
    for (auto it = members_.begin(); it != members_.end();) {
        if ((*it)->refresh(file_buffer_, dir_buffer_)) {
            ++it;
        } else if (it == members_.begin()) {
            root_exited = true;  // keep the root's last readings
            ++it;
        } else {
            add_counters(departed_, (*it)->readings());
            it = members_.erase(it);
        }
    }

    sample.process = sum_members_locked(sample.processes);
    rss_peak_floor_ = std::max(rss_peak_floor_, sample.process.rss_peak_kib);
    sample.process.rss_peak_kib = rss_peak_floor_;
    if (pids) {
        pids->clear();
        for (const auto& member : members_) pids->push_back(member->pid());
    }
    if (root_exited) {
        sample.exited = true;
        sample.processes = 0;
        exited_ = true;
        exit_t_ = sample.t;
        final_ = sample;
        if (pids) pids->clear();
        members_.resize(1);  // nothing more to read; the root's readings stay
    }
    return sample;
}

Snapshot Sampler::snapshot() {
    Snapshot snap;
    std::lock_guard lock(read_mutex_);
    static_cast<Sample&>(snap) = read_locked(&snap.pids);
    return snap;
}

void Sampler::start(double interval_s) {
    if (!(interval_s > 0.0)) throw std::invalid_argument("the sampling interval must be positive");
    if (thread_.joinable()) throw std::logic_error("the sampler is already running");
    {
        std::lock_guard lock(stop_mutex_);
        stop_requested_ = false;
    }
    thread_ = std::thread([this, interval_s] { run(interval_s); });
}

void Sampler::stop() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard lock(stop_mutex_);
        stop_requested_ = true;
    }
    stop_signal_.notify_all();
    thread_.join();
}

void Sampler::run(double interval_s) {
    using clock = std::chrono::steady_clock;
    const auto interval = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(interval_s));
    auto next = clock::now();
    for (;;) {
        Sample sample;
        bool ok = true;
        {
            std::lock_guard lock(read_mutex_);
            try {
                sample = read_locked(nullptr);
            } catch (const std::exception&) {
                ok = false;  // /proc unreadable: end the series rather than the program
            }
        }
        if (ok) {
            std::lock_guard lock(series_mutex_);
            series_.push_back(sample);
        }
        sampling_thread_cpu_s_.store(thread_cpu_seconds());
        if (!ok || sample.exited) return;  // the series ends with the exit sample

        // Fixed cadence; a late sample skips the ticks it missed instead of bunching up.
        const auto now = clock::now();
        next += interval;
        if (next <= now) next += ((now - next) / interval + 1) * interval;
        std::unique_lock lock(stop_mutex_);
        if (stop_signal_.wait_until(lock, next, [this] { return stop_requested_; })) return;
    }
}

std::vector<Sample> Sampler::series() const {
    std::lock_guard lock(series_mutex_);
    return series_;
}

std::optional<double> Sampler::exit_time() const {
    std::lock_guard lock(read_mutex_);
    if (!exited_) return std::nullopt;
    return exit_t_;
}

}  // namespace loadbench::sampler
