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

std::uint64_t tick_ns() {
    static const std::uint64_t ns = 1000000000ull / static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
    return ns;
}

// A member's part of the tree's CPU: its own and (tree) that of the children it reaped.
void add_cpu(ProcessReadings& total, const ProcessReadings& part, bool reaped_children) {
    const std::uint64_t cutime = reaped_children ? part.cutime_ticks : 0;
    const std::uint64_t cstime = reaped_children ? part.cstime_ticks : 0;
    total.utime_ticks += part.utime_ticks + cutime;
    total.stime_ticks += part.stime_ticks + cstime;
    total.cpu_ns += part.cpu_ns + (cutime + cstime) * tick_ns();
}

void add_counters(ProcessReadings& total, const ProcessReadings& part, bool reaped_children = true) {
    add_cpu(total, part, reaped_children);
    total.ctx_voluntary += part.ctx_voluntary;
    total.ctx_involuntary += part.ctx_involuntary;
}

}  // namespace

double clock_ticks_per_second() {
    static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    return ticks;
}

const char* cpu_source_name(CpuSource source) {
    switch (source) {
        case CpuSource::cgroup_v2:
            return "cgroup-v2";
        case CpuSource::cgroup_v1:
            return "cgroup-v1";
        case CpuSource::proc_clock:
            return "proc-clock";
        case CpuSource::proc_ticks:
            return "proc-ticks";
    }
    return "proc-ticks";
}

Sampler::Sampler(int pid, bool tree, const std::string& cgroup_dir, const std::string& allocation_dir,
                 bool count_syscalls, const std::string& syscall_id_file)
    : root_pid_(pid), tree_(tree), allocation_dir_(allocation_dir) {
    file_buffer_.resize(8192);
    dir_buffer_.resize(32768);
    auto root = std::make_unique<TrackedProcess>();
    std::string why;
    if (!root->open(pid, why, file_buffer_)) throw std::invalid_argument(why);
    members_.push_back(Member{std::move(root), false});
    if (!cgroup_dir.empty() && !cgroup_.open(cgroup_dir, why)) throw std::invalid_argument(why);
    if (tree_) scanner_ = std::make_unique<ProcessTreeScanner>();
    if (!allocation_dir_.empty()) read_allocation_pages(allocation_dir_);  // readable?
    if (count_syscalls) {
        // Opened now, before any window: the children the tree forks from here on are counted
        // by inheritance from their first system call.
        syscalls_ = std::make_unique<SyscallCounter>(tree_, syscall_id_file);
        const TrackedProcess& root_process = *members_.front().process;
        syscalls_->add_process(pid, root_process.parent_pid(), root_process.start_ticks());
    }
    series_.reserve(1024);
}

Sampler::~Sampler() { stop(); }

void Sampler::depart_locked(std::size_t index, bool reaped_by_member) {
    const ProcessReadings& r = members_[index].process->readings();
    if (reaped_by_member) {
        // Its CPU (final, with what it ran after our last reading) is now in its reaper's
        // cutime/cstime: only the context switches, which no parent inherits, are kept.
        departed_.ctx_voluntary += r.ctx_voluntary;
        departed_.ctx_involuntary += r.ctx_involuntary;
    } else {
        add_counters(departed_, r);
    }
    members_.erase(members_.begin() + static_cast<std::ptrdiff_t>(index));
}

void Sampler::discover_members_locked(int last_pid) {
    if (last_pid != 0 && last_pid == last_pid_at_scan_) {
        // No pid was allocated since the last listing, so no process can have joined the
        // tree: skip re-listing /proc (the bulk of a sample's cost on a quiet machine) and only
        // drop members that were re-parented out of it (their parent died).
        scanned_.clear();
        for (const auto& member : members_) scanned_.push_back(member.process->pid());
        for (bool shrank = true; shrank;) {
            shrank = false;
            for (auto it = scanned_.begin() + 1; it != scanned_.end(); ++it) {
                const auto& member = *std::find_if(members_.begin(), members_.end(),
                                                   [pid = *it](const Member& m) { return m.process->pid() == pid; });
                if (std::find(scanned_.begin(), scanned_.end(), member.process->parent_pid()) == scanned_.end()) {
                    scanned_.erase(it);
                    shrank = true;
                    break;
                }
            }
        }
    } else {
        // Learn the current parents of members (a member whose parent died was re-parented out).
        for (const auto& member : members_) scanner_->note_parent(member.process->pid(), member.process->parent_pid());
        scanner_->scan(root_pid_, scanned_, dir_buffer_, file_buffer_);
        last_pid_at_scan_ = last_pid;
        ++proc_listings_;
    }

    // Members no longer in the tree: reaped (gone from /proc) or re-parented away (alive).
    // members_ is parents-first, so a reaper that left in this same pass is already known.
    std::vector<int> reapers;
    for (std::size_t i = 1; i < members_.size();) {
        Member& member = members_[i];
        if (std::find(scanned_.begin(), scanned_.end(), member.process->pid()) != scanned_.end()) {
            ++i;
            continue;
        }
        const bool gone = member.process->refresh_cpu(file_buffer_) == ProcessState::gone;
        const int parent = member.process->parent_pid();
        const bool by_member = gone && (std::any_of(members_.begin(), members_.end(),
                                                    [parent](const Member& m) { return m.process->pid() == parent; }) ||
                                        std::find(reapers.begin(), reapers.end(), parent) != reapers.end());
        if (by_member) reapers.push_back(member.process->pid());
        depart_locked(i, by_member);
    }
    for (const int pid : scanned_) {
        if (pid == root_pid_) continue;
        const bool known = std::any_of(members_.begin(), members_.end(),
                                       [pid](const Member& member) { return member.process->pid() == pid; });
        if (known) continue;
        auto process = std::make_unique<TrackedProcess>();
        std::string why;
        if (!process->open(pid, why, file_buffer_)) continue;
        if (syscalls_) syscalls_->add_process(pid, process->parent_pid(), process->start_ticks());
        members_.push_back(Member{std::move(process), false});
    }
}

void Sampler::order_members_locked() {
    // Parents before children: a child reaped while a pass reads the tree is then either read
    // (its parent's cutime, read before, does not hold it yet) or missing - never both counted.
    // Depths are computed first: members_ must not be searched while it is being sorted.
    std::vector<std::pair<int, std::size_t>> order;  // (depth, index)
    order.reserve(members_.size());
    for (std::size_t i = 0; i < members_.size(); ++i) {
        int depth = 0;
        for (int pid = members_[i].process->pid(); pid != root_pid_ && depth < 64; ++depth) {
            const auto parent = std::find_if(members_.begin(), members_.end(),
                                             [pid](const Member& m) { return m.process->pid() == pid; });
            if (parent == members_.end()) break;
            pid = parent->process->parent_pid();
        }
        order.emplace_back(i == 0 ? -1 : depth, i);
    }
    std::stable_sort(order.begin(), order.end());
    std::vector<Member> sorted;
    sorted.reserve(members_.size());
    for (const auto& [depth, index] : order) sorted.push_back(std::move(members_[index]));
    members_ = std::move(sorted);
}

void Sampler::read_members_locked(bool& root_exited) {
    if (members_.size() > 1) order_members_locked();
    std::vector<int> reapers;  // pids whose cutime holds a departed member
    bool full = true;
    // A member found reaped during a pass may be in a parent's cutime that was read before the
    // reap: read the CPU again until one pass loses nobody (bounded; a reap is rare).
    for (int pass = 0; pass < 4; ++pass) {
        bool lost = false;
        for (std::size_t i = 0; i < members_.size();) {
            Member& member = members_[i];
            const ProcessState state =
                full ? member.process->refresh(file_buffer_, dir_buffer_) : member.process->refresh_cpu(file_buffer_);
            if (state == ProcessState::alive) {
                member.zombie = false;
                ++i;
            } else if (i == 0) {
                root_exited = true;  // keep the root's last readings
                return;
            } else if (state == ProcessState::zombie) {
                member.zombie = true;  // counted with its final CPU until its parent reaps it
                ++i;
            } else {
                const int parent = member.process->parent_pid();
                const bool by_member = std::any_of(members_.begin(), members_.end(),
                                                   [parent](const Member& m) { return m.process->pid() == parent; }) ||
                                       std::find(reapers.begin(), reapers.end(), parent) != reapers.end();
                if (by_member) reapers.push_back(member.process->pid());  // its own reaped children went with it
                depart_locked(i, by_member);
                lost = true;
            }
        }
        if (!lost) return;
        full = false;
    }
}

Sample Sampler::sum_members_locked() const {
    Sample sample;
    ProcessReadings total = departed_;
    std::uint32_t live = 0;
    bool ns = true;
    for (const auto& member : members_) {
        const ProcessReadings& r = member.process->readings();
        add_counters(total, r, tree_);  // tree=false: the process alone, not the children it reaped
        ns = ns && member.process->cpu_in_ns();
        if (member.zombie) continue;
        total.rss_kib += r.rss_kib;
        total.rss_peak_kib += r.rss_peak_kib;
        total.fds += r.fds;
        total.threads += r.threads;
        ++live;
    }
    sample.process = total;
    sample.processes = live;
    sample.cpu_ns = total.cpu_ns;
    sample.user_ns = total.utime_ticks * tick_ns();
    sample.system_ns = total.stime_ticks * tick_ns();
    sample.cpu_source = ns ? CpuSource::proc_clock : CpuSource::proc_ticks;
    return sample;
}

Sample Sampler::read_locked(std::vector<int>* pids, bool with_pss) {
    const double t = monotonic_seconds();
    const MachineCounters machine = machine_.read(file_buffer_);
    if (exited_) {
        Sample frozen = final_;
        frozen.t = t;
        frozen.machine = machine;
        frozen.rss_max_kib = final_.process.rss_kib;
        if (pids) pids->clear();
        return frozen;
    }

    if (tree_) discover_members_locked(machine.last_pid);
    bool root_exited = false;
    read_members_locked(root_exited);

    Sample sample = sum_members_locked();
    if (syscalls_) sample.syscalls = syscalls_->read();  // the same moment as the CPU
    // A child reaped by a member leaves its exact clock for its parent's cutime/cstime, each
    // truncated to a tick: the sum may dip by up to 2 ticks per reaper. The total never drops.
    cpu_floor_ns_ = std::max(cpu_floor_ns_, sample.cpu_ns);
    sample.cpu_ns = cpu_floor_ns_;
    sample.t = t;
    sample.machine = machine;
    if (cgroup_.is_open()) {
        // Read after the members, so the cgroup's reading is no older than theirs.
        if (const auto usage = cgroup_.read(file_buffer_)) {
            sample.cpu_ns = usage->usage_ns;
            sample.user_ns = usage->user_ns;
            sample.system_ns = usage->system_ns;
            sample.cpu_source = cgroup_.version() == 2 ? CpuSource::cgroup_v2 : CpuSource::cgroup_v1;
        } else {
            sample.cpu_ns = final_cgroup_.usage_ns;  // removed with the server: its last reading
            sample.user_ns = final_cgroup_.user_ns;
            sample.system_ns = final_cgroup_.system_ns;
            sample.cpu_source = cgroup_.version() == 2 ? CpuSource::cgroup_v2 : CpuSource::cgroup_v1;
        }
        final_cgroup_ = {sample.cpu_ns, sample.user_ns, sample.system_ns};
    }
    rss_peak_floor_ = std::max(rss_peak_floor_, sample.process.rss_peak_kib);
    sample.process.rss_peak_kib = rss_peak_floor_;
    rss_max_since_snapshot_ = std::max(rss_max_since_snapshot_, sample.process.rss_kib);
    sample.rss_max_kib = rss_max_since_snapshot_;
    if (with_pss && !root_exited) {
        std::int64_t pss = 0;
        for (const auto& member : members_) {
            if (member.zombie) continue;
            const auto kib = member.process->read_pss_kib(file_buffer_);
            if (kib) {
                pss += static_cast<std::int64_t>(*kib);
            } else if (&member == &members_.front()) {
                pss = -1;  // smaps_rollup unreadable: no PSS at all rather than a partial one
                break;
            }
        }
        sample.pss_kib = pss;
    }
    if (pids) {
        pids->clear();
        for (const auto& member : members_)
            if (!member.zombie) pids->push_back(member.process->pid());
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
    static_cast<Sample&>(snap) = read_locked(&snap.pids, true);
    // right after the CPU, like it: the window's allocations and its CPU cover the same span
    // (a directory gone meanwhile - the server stopped - leaves them unknown, never the snapshot)
    if (!allocation_dir_.empty()) {
        try {
            snap.allocations = read_allocation_pages(allocation_dir_);
        } catch (const std::invalid_argument&) {
        }
    }
    rss_max_since_snapshot_ = 0;  // the next snapshot's peak covers the readings after this one
    if (!snap.syscalls) snap.syscalls_na = syscalls_na_locked();
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
                sample = read_locked(nullptr, false);
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

std::string Sampler::syscalls_na_locked() const {
    if (!syscalls_) return "not counted (turned off)";
    return syscalls_->why();
}

std::string Sampler::syscalls_na() const {
    std::lock_guard lock(read_mutex_);
    return syscalls_na_locked();
}

std::optional<double> Sampler::exit_time() const {
    std::lock_guard lock(read_mutex_);
    if (!exited_) return std::nullopt;
    return exit_t_;
}

}  // namespace loadbench::sampler
