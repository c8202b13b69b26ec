#include "core/sampler/syscall_counter.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace loadbench::sampler {

const char* const kSysEnterIdPaths[2] = {
    "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
    "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
};

namespace {

std::string paranoid_level() {
    std::vector<char> buffer(64);
    const FileDescriptor file = open_read_only(AT_FDCWD, "/proc/sys/kernel/perf_event_paranoid");
    const ReadResult text = read_whole(file, buffer);
    if (!text.ok) return "unreadable";
    std::string_view level = text.text;
    while (!level.empty() && (level.back() == '\n' || level.back() == ' ')) level.remove_suffix(1);
    return std::string(level);
}

// One sentence on why perf_event_open failed with `error`, in the words a user can act on.
std::string refusal(int error, int tid) {
    const std::string what = "perf_event_open(raw_syscalls:sys_enter, tid " + std::to_string(tid) + ") failed: ";
    switch (error) {
        case EACCES:
        case EPERM:
            return what + std::strerror(error) + " (perf_event_paranoid is " + paranoid_level() +
                   "; counting another process's system calls needs CAP_PERFMON or root, or a lower "
                   "kernel.perf_event_paranoid; in a container a seccomp filter may block perf_event_open)";
        case ENOSYS:
            return what + "the kernel has no perf events (ENOSYS; or a seccomp filter answers so)";
        case ENOENT:
        case EINVAL:
            return what + std::strerror(error) + " (the kernel does not count this tracepoint with perf)";
        case EMFILE:
        case ENFILE:
            return what + "out of file descriptors (one counter per thread of the server)";
        default:
            return what + std::strerror(error);
    }
}

}  // namespace

std::uint64_t boot_time_ticks() {
    timespec now{};
    ::clock_gettime(CLOCK_BOOTTIME, &now);
    static const std::uint64_t hz = static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
    return static_cast<std::uint64_t>(now.tv_sec) * hz + static_cast<std::uint64_t>(now.tv_nsec) * hz / 1000000000ull;
}

SyscallCounter::SyscallCounter(bool follow_processes, const std::string& id_file)
    : follow_processes_(follow_processes) {
    dir_buffer_.resize(4096);
    std::vector<char> buffer(64);
    std::vector<std::string> tried;
    if (!id_file.empty()) {
        tried.push_back(id_file);
    } else {
        for (const char* path : kSysEnterIdPaths) tried.emplace_back(path);
    }
    int error = 0;
    for (const std::string& path : tried) {
        const FileDescriptor file = open_read_only(AT_FDCWD, path.c_str());
        if (!file.is_open()) {
            error = errno;
            continue;
        }
        const ReadResult text = read_whole(file, buffer);
        if (!text.ok) {
            error = text.error;
            continue;
        }
        std::uint64_t id = 0;
        const auto [end, ec] = std::from_chars(text.text.data(), text.text.data() + text.text.size(), id);
        (void)end;
        if (ec == std::errc() && id > 0) {
            tracepoint_id_ = id;
            return;
        }
        error = EINVAL;
    }
    std::string paths;
    for (const std::string& path : tried) paths += (paths.empty() ? "" : " or ") + path;
    refuse("no raw_syscalls:sys_enter tracepoint id: cannot read " + paths + " (" + std::strerror(error) +
           "; tracefs not mounted, or not readable)");
}

void SyscallCounter::refuse(std::string why) {
    why_ = std::move(why);
    counters_.clear();  // a partial count is never a total
}

bool SyscallCounter::open_thread(int tid) {
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.config = tracepoint_id_;
    attr.inherit = 1;
    attr.inherit_thread = follow_processes_ ? 0 : 1;
    const long fd = ::syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0) {
        counters_.emplace_back(static_cast<int>(fd));
        return true;
    }
    if (errno == ESRCH) return true;  // the thread exited meanwhile: nothing left to count
    if (errno == EINVAL && !follow_processes_) {
        refuse(
            "perf_event_open(raw_syscalls:sys_enter) failed: the kernel cannot inherit a counter to threads "
            "only (inherit_thread, Linux 5.13+), which counting a process without its children needs");
        return false;
    }
    refuse(refusal(errno, tid));
    return false;
}

void SyscallCounter::add_process(int pid, int parent_pid, std::uint64_t start_ticks) {
    if (!available() || counted_since_.count(pid)) return;
    if (!counted_since_.empty()) {
        const auto parent = counted_since_.find(parent_pid);
        const std::uint64_t since = parent != counted_since_.end() ? parent->second : first_counted_since_;
        // Started in a later tick than its parent's counters: a counted thread forked it, so it
        // is counted already. In the same tick the order is unknown; it is taken as forked
        // after (a server's workers forked as the sampler starts), the rarer miss of a process
        // forked just before being left uncounted rather than counted twice.
        if (start_ticks >= since) {
            counted_since_.emplace(pid, start_ticks);
            return;
        }
    }
    char path[32];
    std::snprintf(path, sizeof path, "/proc/%d/task", pid);
    const FileDescriptor tasks = open_directory(AT_FDCWD, path);
    if (!tasks.is_open()) return;  // exited meanwhile
    // A thread created between this listing and the opening of its creator's counter is
    // missed (microseconds, once per process, before the run's window).
    std::vector<int> tids;
    for_each_entry(tasks, dir_buffer_, [&](std::string_view name) {
        if (const int tid = parse_pid_name(name)) tids.push_back(tid);
    });
    for (const int tid : tids)
        if (!open_thread(tid)) return;
    const std::uint64_t since = boot_time_ticks();
    if (counted_since_.empty()) first_counted_since_ = since;
    counted_since_.emplace(pid, since);
}

std::optional<std::uint64_t> SyscallCounter::read() {
    if (!available()) return std::nullopt;
    std::uint64_t total = 0;
    for (const FileDescriptor& counter : counters_) {
        std::uint64_t value = 0;
        if (::read(counter.get(), &value, sizeof value) != static_cast<ssize_t>(sizeof value)) {
            refuse(std::string("reading a raw_syscalls:sys_enter counter failed: ") + std::strerror(errno));
            return std::nullopt;
        }
        total += value;
    }
    return total;
}

}  // namespace loadbench::sampler
