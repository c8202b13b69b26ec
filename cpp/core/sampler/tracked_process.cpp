#include "core/sampler/tracked_process.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/sampler/proc_stat.hpp"
#include "core/sampler/proc_status.hpp"

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
    return true;
}

bool TrackedProcess::read_stat(std::vector<char>& file_buffer, bool& exited) {
    const ReadResult text = read_whole(stat_, file_buffer);
    const auto stat = text.ok ? parse_proc_stat(text.text) : std::nullopt;
    if (!stat) {
        exited = true;  // ESRCH: the process is gone and reaped
        return false;
    }
    // CPU counters only grow; a zombie's are final.
    readings_.utime_ticks = std::max(readings_.utime_ticks, stat->utime_ticks);
    readings_.stime_ticks = std::max(readings_.stime_ticks, stat->stime_ticks);
    ppid_ = stat->ppid;
    exited = stat->has_exited();
    if (!exited) readings_.threads = static_cast<std::uint64_t>(std::max<std::int64_t>(stat->num_threads, 0));
    return !exited;
}

bool TrackedProcess::refresh(std::vector<char>& file_buffer, std::vector<char>& dir_buffer) {
    bool exited = false;
    if (!read_stat(file_buffer, exited)) return false;

    const ReadResult status_text = read_whole(status_, file_buffer);
    if (!status_text.ok) return false;
    const ProcStatus status = parse_proc_status(status_text.text);
    if (!status.has_memory) return false;  // became a zombie between the two reads
    readings_.rss_kib = status.vm_rss_kib;
    readings_.rss_peak_kib = status.vm_hwm_kib;

    const long fds = count_entries(fd_dir_, dir_buffer);
    if (fds < 0) return false;
    readings_.fds = static_cast<std::uint64_t>(fds);

    read_tasks(file_buffer, dir_buffer, status.voluntary_ctxt_switches, status.nonvoluntary_ctxt_switches);
    return true;
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
