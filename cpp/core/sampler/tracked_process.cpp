#include "core/sampler/tracked_process.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/sampler/proc_stat.hpp"
#include "core/sampler/proc_status.hpp"

#include <charconv>
#include <unistd.h>

namespace loadbench::sampler {

bool TrackedProcess::open(int pid, std::string& why, std::vector<char>& file_buffer) {
    const std::string id = std::to_string(pid);
    pid_ = pid;
    if (pid <= 0) {
        why = "invalid pid " + id + ": a process id is a positive integer";
        return false;
    }
    const std::string dir_path = "/proc/" + id;
    dir_ = open_directory(AT_FDCWD, dir_path.c_str());
    if (!dir_.is_open()) {
        why = errno == ENOENT ? "no process with pid " + id + " (" + dir_path + " does not exist)"
                              : "cannot open " + dir_path + ": " + std::strerror(errno);
        return false;
    }
    stat_ = open_read_only(dir_.get(), "stat");
    status_ = open_read_only(dir_.get(), "status");
    if (!stat_.is_open() || !status_.is_open()) {
        why = "cannot read " + dir_path + "/stat or /status: " + std::strerror(errno);
        return false;
    }
    const ReadResult stat_text = read_whole(stat_, file_buffer);
    const auto stat = stat_text.ok ? parse_proc_stat(stat_text.text) : std::nullopt;
    if (!stat) {
        why = "no process with pid " + id + " (it exited while being opened)";
        return false;
    }
    if (stat->is_kernel_thread()) {
        why = "pid " + id + " is a kernel thread (" + std::string(stat->comm) +
              "), not a process with memory and open files to sample";
        return false;
    }
    if (stat->has_exited()) {
        why = "pid " + id + " (" + std::string(stat->comm) + ") has already exited (zombie)";
        return false;
    }
    start_ticks_ = stat->starttime_ticks;
    ppid_ = stat->ppid;
    const ReadResult status_text = read_whole(status_, file_buffer);
    if (status_text.ok) {
        const ProcStatus status = parse_proc_status(status_text.text);
        // /proc/<tid> of a thread exists too, although /proc does not list it.
        if (status.tgid != 0 && status.tgid != pid) {
            why = "pid " + id + " is a thread of process " + std::to_string(status.tgid) + "; sample pid " +
                  std::to_string(status.tgid) + " instead";
            return false;
        }
    }
    fd_dir_ = open_directory(dir_.get(), "fd");
    if (!fd_dir_.is_open()) {
        why = errno == EACCES ? "pid " + id + " belongs to another user: permission denied reading " + dir_path +
                                    "/fd (sample it as that user or as root)"
                              : "cannot open " + dir_path + "/fd: " + std::strerror(errno);
        return false;
    }
    task_dir_ = open_directory(dir_.get(), "task");
    if (!task_dir_.is_open()) {
        why = "cannot open " + dir_path + "/task: " + std::strerror(errno);
        return false;
    }
    smaps_rollup_ = open_read_only(dir_.get(), "smaps_rollup");  // Linux 4.14+; optional
    timespec probe{};
    has_clock_ = ::clock_getcpuclockid(pid, &cpu_clock_) == 0 && ::clock_gettime(cpu_clock_, &probe) == 0;
    return true;
}

ProcessState TrackedProcess::refresh_cpu(std::vector<char>& file_buffer) { return read_stat(file_buffer); }

std::optional<std::uint64_t> TrackedProcess::read_pss_kib(std::vector<char>& file_buffer) {
    const ReadResult text = read_whole(smaps_rollup_, file_buffer);
    if (!text.ok) return std::nullopt;
    const std::size_t at = text.text.find("\nPss:");
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view rest = text.text.substr(at + 5);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    std::uint64_t kib = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kib);
    (void)end;
    if (ec != std::errc()) return std::nullopt;
    return kib;
}

ProcessState TrackedProcess::read_stat(std::vector<char>& file_buffer) {
    // The clock first, the stat file after: a stat read that succeeds proves the pid still
    // named this process (not yet reaped, so not reused) when the clock was read.
    timespec clock{};
    const bool clock_ok = has_clock_ && ::clock_gettime(cpu_clock_, &clock) == 0;
    const ReadResult text = read_whole(stat_, file_buffer);
    const auto stat = text.ok ? parse_proc_stat(text.text) : std::nullopt;
    if (!stat) return ProcessState::gone;  // ESRCH: the process is gone and reaped
    // CPU counters only grow; a zombie's are final.
    readings_.utime_ticks = std::max(readings_.utime_ticks, stat->utime_ticks);
    readings_.stime_ticks = std::max(readings_.stime_ticks, stat->stime_ticks);
    readings_.cutime_ticks =
        std::max<std::uint64_t>(readings_.cutime_ticks, std::max<std::int64_t>(stat->cutime_ticks, 0));
    readings_.cstime_ticks =
        std::max<std::uint64_t>(readings_.cstime_ticks, std::max<std::int64_t>(stat->cstime_ticks, 0));
    std::uint64_t own_ns = 0;
    if (clock_ok) {
        own_ns = static_cast<std::uint64_t>(clock.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(clock.tv_nsec);
    } else {
        has_clock_ = false;  // one source for the whole life of the reading: never mix
        static const std::uint64_t tick_ns = 1000000000ull / static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
        own_ns = (readings_.utime_ticks + readings_.stime_ticks) * tick_ns;
    }
    readings_.cpu_ns = std::max(readings_.cpu_ns, own_ns);
    ppid_ = stat->ppid;
    if (stat->has_exited()) return ProcessState::zombie;
    readings_.threads = static_cast<std::uint64_t>(std::max<std::int64_t>(stat->num_threads, 0));
    return ProcessState::alive;
}

ProcessState TrackedProcess::refresh(std::vector<char>& file_buffer, std::vector<char>& dir_buffer) {
    const ProcessState state = read_stat(file_buffer);
    if (state != ProcessState::alive) return state;

    const ReadResult status_text = read_whole(status_, file_buffer);
    if (!status_text.ok) return ProcessState::gone;
    const ProcStatus status = parse_proc_status(status_text.text);
    if (!status.has_memory) return ProcessState::zombie;  // became a zombie between the two reads
    readings_.rss_kib = status.vm_rss_kib;
    readings_.rss_peak_kib = status.vm_hwm_kib;

    const long fds = count_entries(fd_dir_, dir_buffer);
    if (fds < 0) return ProcessState::zombie;  // exiting: its files are being closed
    readings_.fds = static_cast<std::uint64_t>(fds);

    read_tasks(file_buffer, dir_buffer, status.voluntary_ctxt_switches, status.nonvoluntary_ctxt_switches);
    return ProcessState::alive;
}

void TrackedProcess::read_tasks(std::vector<char>& file_buffer, std::vector<char>& dir_buffer,
                                std::uint64_t main_voluntary, std::uint64_t main_involuntary) {
    for (Task& task : tasks_) task.listed = false;
    for_each_entry(task_dir_, dir_buffer, [&](std::string_view name) {
        const int tid = parse_pid_name(name);
        if (tid == 0) return;
        auto it = std::find_if(tasks_.begin(), tasks_.end(), [tid](const Task& t) { return t.tid == tid; });
        if (it == tasks_.end()) {
            Task task;
            task.tid = tid;
            if (tid != pid_) {  // the main thread's counters come with /proc/<pid>/status
                char path[48];
                std::snprintf(path, sizeof path, "task/%d/status", tid);
                task.status = open_read_only(dir_.get(), path);
            }
            tasks_.push_back(std::move(task));
            it = tasks_.end() - 1;
        }
        it->listed = true;
    });

    std::uint64_t voluntary = 0, involuntary = 0;
    for (Task& task : tasks_) {
        if (!task.listed) continue;
        if (task.tid == pid_) {
            task.ctx_voluntary = main_voluntary;
            task.ctx_involuntary = main_involuntary;
        } else {
            const ReadResult text = read_whole(task.status, file_buffer);
            if (text.ok) {
                const ProcStatus status = parse_proc_status(text.text);
                if (status.has_ctxt_switches) {
                    task.ctx_voluntary = std::max(task.ctx_voluntary, status.voluntary_ctxt_switches);
                    task.ctx_involuntary = std::max(task.ctx_involuntary, status.nonvoluntary_ctxt_switches);
                }
            }
        }
        voluntary += task.ctx_voluntary;
        involuntary += task.ctx_involuntary;
    }
    // A thread that exited keeps the counts it had at its last reading.
    for (auto it = tasks_.begin(); it != tasks_.end();) {
        if (it->listed) {
            ++it;
            continue;
        }
        exited_tasks_voluntary_ += it->ctx_voluntary;
        exited_tasks_involuntary_ += it->ctx_involuntary;
        it = tasks_.erase(it);
    }
    readings_.ctx_voluntary = std::max(readings_.ctx_voluntary, voluntary + exited_tasks_voluntary_);
    readings_.ctx_involuntary = std::max(readings_.ctx_involuntary, involuntary + exited_tasks_involuntary_);
}

}  // namespace loadbench::sampler
