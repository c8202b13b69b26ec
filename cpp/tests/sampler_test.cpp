// Unit tests of the /proc parsers and the sampler against this test process and its children.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/sampler/cgroup_cpu.hpp"
#include "core/sampler/machine_stat.hpp"
#include "core/sampler/proc_stat.hpp"
#include "core/sampler/proc_status.hpp"
#include "core/sampler/sampler.hpp"
#include "proc_wait.hpp"

using namespace loadbench::sampler;
using loadbench::sampler::testing::read_file;
using loadbench::sampler::testing::wait_until_sleeping;

namespace {

// A real line of /proc/<pid>/stat (kernel 6.x, 52 fields), with the name replaced.
std::string stat_line(const std::string& comm) {
    return "4242 (" + comm +
           ") S 17 4242 4242 0 -1 4194560 1234 0 0 0 321 45 6 7 20 0 3 0 98765 12345678 2500 "
           "18446744073709551615 1 1 0 0 0 0 0 16781312 16386 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
}

}  // namespace

TEST(ProcStatParse, PlainName) {
    const std::string line = stat_line("nginx");  // comm is a view into it
    const auto stat = parse_proc_stat(line);
    ASSERT_TRUE(stat);
    EXPECT_EQ(stat->pid, 4242);
    EXPECT_EQ(stat->comm, "nginx");
    EXPECT_EQ(stat->state, 'S');
    EXPECT_EQ(stat->ppid, 17);
    EXPECT_EQ(stat->utime_ticks, 321u);
    EXPECT_EQ(stat->stime_ticks, 45u);
    EXPECT_EQ(stat->cutime_ticks, 6);
    EXPECT_EQ(stat->cstime_ticks, 7);
    EXPECT_EQ(stat->num_threads, 3);
    EXPECT_EQ(stat->starttime_ticks, 98765u);
    EXPECT_EQ(stat->rss_pages, 2500);
    EXPECT_FALSE(stat->is_kernel_thread());
    EXPECT_FALSE(stat->has_exited());
}

TEST(ProcStatParse, NameWithSpacesAndParentheses) {
    // Splitting on spaces, or at the first ')', shifts every field after the name.
    for (const std::string name : {"a (b) c", ") ) 1 2 3", "x)", "(", "a b", "))) S 99 (("}) {
        const std::string line = stat_line(name);
        const auto stat = parse_proc_stat(line);
        ASSERT_TRUE(stat) << name;
        EXPECT_EQ(stat->comm, name);
        EXPECT_EQ(stat->ppid, 17) << name;
        EXPECT_EQ(stat->utime_ticks, 321u) << name;
        EXPECT_EQ(stat->num_threads, 3) << name;
    }
}

TEST(ProcStatParse, RejectsMalformedText) {
    EXPECT_FALSE(parse_proc_stat(""));
    EXPECT_FALSE(parse_proc_stat("4242 nginx S 1 2 3"));
    EXPECT_FALSE(parse_proc_stat("4242 (nginx) S 1 2"));  // truncated
    EXPECT_FALSE(parse_proc_stat("x (nginx)" + stat_line("n").substr(12)));
    std::string bad = stat_line("n");
    bad.replace(bad.find(" 321 "), 5, " 3x1 ");
    EXPECT_FALSE(parse_proc_stat(bad));
}

TEST(ProcStatParse, KernelThreadAndZombie) {
    std::string kthread = stat_line("kthreadd");
    kthread.replace(kthread.find(" 4194560 "), 9, " 2129984 ");  // PF_KTHREAD | ...
    EXPECT_TRUE(parse_proc_stat(kthread)->is_kernel_thread());
    std::string zombie = stat_line("gone");
    zombie.replace(zombie.find(") S "), 4, ") Z ");
    EXPECT_TRUE(parse_proc_stat(zombie)->has_exited());
}

TEST(ProcStatParse, ThisProcess) {
    const auto stat = parse_proc_stat(read_file("/proc/self/stat"));
    ASSERT_TRUE(stat);
    EXPECT_EQ(stat->pid, getpid());
    EXPECT_EQ(stat->ppid, getppid());
}

TEST(ProcStatusParse, MemoryAndContextSwitches) {
    const std::string text =
        "Name:\tbeast\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\nPPid:\t1\n"
        "VmPeak:\t  200000 kB\nVmSize:\t  190000 kB\nVmHWM:\t    9876 kB\nVmRSS:\t    5432 kB\n"
        "Threads:\t3\nvoluntary_ctxt_switches:\t150\nnonvoluntary_ctxt_switches:\t7\n";
    const ProcStatus status = parse_proc_status(text);
    EXPECT_EQ(status.tgid, 4242);
    EXPECT_TRUE(status.has_memory);
    EXPECT_EQ(status.vm_rss_kib, 5432u);
    EXPECT_EQ(status.vm_hwm_kib, 9876u);
    EXPECT_TRUE(status.has_ctxt_switches);
    EXPECT_EQ(status.voluntary_ctxt_switches, 150u);
    EXPECT_EQ(status.nonvoluntary_ctxt_switches, 7u);
}

TEST(ProcStatusParse, ZombieHasNoMemory) {
    const ProcStatus status = parse_proc_status("Name:\tx\nState:\tZ (zombie)\nTgid:\t9\nThreads:\t1\n");
    EXPECT_FALSE(status.has_memory);
    EXPECT_FALSE(status.has_ctxt_switches);
}

TEST(MachineStatParse, CpuLineWithSteal) {
    const auto ticks = parse_machine_cpu_line("cpu  13350 3628 5318 64089 696 0 116 282 0 0\ncpu0 1 2 3 4\n");
    ASSERT_TRUE(ticks);
    EXPECT_EQ(ticks->user, 13350u);
    EXPECT_EQ(ticks->nice, 3628u);
    EXPECT_EQ(ticks->system, 5318u);
    EXPECT_EQ(ticks->idle, 64089u);
    EXPECT_EQ(ticks->iowait, 696u);
    EXPECT_EQ(ticks->irq, 0u);
    EXPECT_EQ(ticks->softirq, 116u);
    EXPECT_EQ(ticks->steal, 282u);
    EXPECT_EQ(ticks->total(), 13350u + 3628 + 5318 + 64089 + 696 + 116 + 282);
    EXPECT_FALSE(parse_machine_cpu_line("cpu0 1 2 3 4\n"));
    EXPECT_FALSE(parse_machine_cpu_line("cpu  1 2\n"));
}

TEST(MachineStatParse, Loadavg) {
    EXPECT_DOUBLE_EQ(*parse_loadavg_1m("3.20 1.06 0.41 6/115 9272\n"), 3.20);
    EXPECT_FALSE(parse_loadavg_1m("garbage"));
    EXPECT_FALSE(parse_loadavg_1m("x.y 1 2 3/4 5"));
}

TEST(Sampler, RefusesInvalidPids) {
    auto message = [](int pid) {
        try {
            Sampler sampler(pid, true);
        } catch (const std::invalid_argument& error) {
            return std::string(error.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message(0), "invalid pid 0: a process id is a positive integer");
    EXPECT_EQ(message(-5), "invalid pid -5: a process id is a positive integer");
    EXPECT_NE(message(2).find("is a kernel thread"), std::string::npos);
    EXPECT_NE(message(1 << 30).find("no process with pid 1073741824"), std::string::npos);
}

TEST(Sampler, SeesFdsAndThreadsOfThisProcess) {
    Sampler sampler(getpid(), false);
    const Snapshot before = sampler.snapshot();
    std::vector<int> fds;
    for (int i = 0; i < 10; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    std::atomic<bool> release{false};
    std::atomic<int> naps{0};
    std::thread worker([&] {
        for (; !release; ++naps) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (naps < 5) std::this_thread::yield();
    const Snapshot during = sampler.snapshot();
    release = true;
    worker.join();
    for (const int fd : fds) ::close(fd);
    EXPECT_EQ(during.process.fds, before.process.fds + 10);
    EXPECT_EQ(during.process.threads, before.process.threads + 1);
    EXPECT_GT(during.process.ctx_voluntary, before.process.ctx_voluntary);  // the sleeping worker
    EXPECT_GT(during.process.rss_kib, 0u);
    EXPECT_GE(during.process.rss_peak_kib, during.process.rss_kib);
    EXPECT_EQ(during.pids, std::vector<int>{getpid()});
    EXPECT_GT(during.machine.cpu.total(), 0u);
}

TEST(Sampler, TreeFollowsForkedChildrenAndTheirExit) {
    int go[2], done[2];
    ASSERT_EQ(::pipe(go), 0);
    ASSERT_EQ(::pipe(done), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // On "go": burn 0.2 s of CPU, say "done", then wait for the parent to close the pipe.
        ::prctl(PR_SET_NAME, "a (b) c", 0, 0, 0);
        ::close(go[1]);
        ::close(done[0]);
        char byte = 0;
        if (::read(go[0], &byte, 1) != 1) ::_exit(1);
        timespec start{}, now{};
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
        volatile unsigned long sink = 0;
        do {
            for (int i = 0; i < 100000; ++i) sink = sink + static_cast<unsigned long>(i);
            ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
        } while ((now.tv_sec - start.tv_sec) * 1e9 + (now.tv_nsec - start.tv_nsec) < 0.2e9);
        if (::write(done[1], &byte, 1) != 1) ::_exit(1);
        while (::read(go[0], &byte, 1) > 0) {
        }
        ::_exit(0);
    }
    ::close(go[0]);
    ::close(done[1]);
    Sampler tree(getpid(), true);
    const Snapshot first = tree.snapshot();
    EXPECT_EQ(first.pids.front(), getpid());
    EXPECT_NE(std::find(first.pids.begin(), first.pids.end(), child), first.pids.end());

    tree.start(0.01);
    char byte = 'g';
    ASSERT_EQ(::write(go[1], &byte, 1), 1);
    ASSERT_EQ(::read(done[0], &byte, 1), 1);  // the child has burned its 0.2 s
    ASSERT_TRUE(wait_until_sleeping(child));  // ...and all of it is in /proc (see above)
    const Snapshot burned = tree.snapshot();
    ::close(go[1]);
    ::close(done[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    const Snapshot after_exit = tree.snapshot();
    tree.stop();

    EXPECT_EQ(std::find(after_exit.pids.begin(), after_exit.pids.end(), child), after_exit.pids.end());
    EXPECT_FALSE(after_exit.exited);  // the root is alive
    const auto cpu = [](const Snapshot& s) { return s.process.utime_ticks + s.process.stime_ticks; };
    // utime and stime are each truncated to a tick: a reading of 0.2 s more CPU may show
    // up to 2 ticks less (the child's own clock guarantees at least 0.2 s).
    EXPECT_GE(cpu(burned) - cpu(first), static_cast<std::uint64_t>(0.2 * clock_ticks_per_second()) - 2);
    EXPECT_GE(cpu(after_exit), cpu(burned));  // the child's CPU stays counted after it left
    EXPECT_GE(tree.series().size(), 2u);
    EXPECT_GT(tree.sampling_thread_cpu_s(), 0.0);
}

TEST(Sampler, ExitedChildKeepsLastSample) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        ::_exit(0);
    }
    Sampler sampler(child, false);
    const Snapshot alive = sampler.snapshot();
    sampler.start(0.01);
    int status = 0;
    ::waitpid(child, &status, 0);
    for (int i = 0; i < 200 && !sampler.exit_time(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    sampler.stop();
    ASSERT_TRUE(sampler.exit_time());
    const auto series = sampler.series();
    ASSERT_GE(series.size(), 2u);
    EXPECT_TRUE(series.back().exited);
    EXPECT_EQ(series.back().process.rss_kib, series[series.size() - 2].process.rss_kib);
    const Snapshot gone = sampler.snapshot();
    EXPECT_TRUE(gone.exited);
    EXPECT_TRUE(gone.pids.empty());
    EXPECT_EQ(gone.process.rss_kib, series[series.size() - 2].process.rss_kib);
    EXPECT_GT(alive.process.rss_kib, 0u);
}

TEST(MachineStatParse, LastPid) {
    EXPECT_EQ(*parse_loadavg_last_pid("3.20 1.06 0.41 6/115 9272\n"), 9272);
    EXPECT_FALSE(parse_loadavg_last_pid("3.20 1.06 0.41 6/115 x\n"));
    EXPECT_FALSE(parse_loadavg_last_pid(""));
}

TEST(Sampler, OrphanedGrandchildLeavesTheTree) {
    // Root (this test) -> middle -> grandchild; the middle process exits, so the grandchild is
    // re-parented to init (or a subreaper outside the tree) and is no longer the root's.
    int report[2], release[2];
    ASSERT_EQ(::pipe(report), 0);
    ASSERT_EQ(::pipe(release), 0);
    const pid_t middle = ::fork();
    ASSERT_GE(middle, 0);
    if (middle == 0) {
        const pid_t grandchild = ::fork();
        if (grandchild == 0) {
            char byte;
            // Waits for the test's release (or 10 s at most: it must end by itself).
            ::close(release[1]);
            fd_set set;
            FD_ZERO(&set);
            FD_SET(release[0], &set);
            timeval limit{10, 0};
            if (::select(release[0] + 1, &set, nullptr, nullptr, &limit) > 0) (void)!::read(release[0], &byte, 1);
            ::_exit(0);
        }
        (void)!::write(report[1], &grandchild, sizeof grandchild);
        ::_exit(0);
    }
    ::close(report[1]);
    ::close(release[0]);
    pid_t grandchild = 0;
    ASSERT_EQ(::read(report[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
    Sampler tree(getpid(), true);
    int status = 0;
    ::waitpid(middle, &status, 0);
    // The middle process may or may not have been seen; either way the orphan must go.
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
        const Snapshot snap = tree.snapshot();
        gone = std::find(snap.pids.begin(), snap.pids.end(), grandchild) == snap.pids.end() &&
               std::find(snap.pids.begin(), snap.pids.end(), middle) == snap.pids.end();
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::close(release[1]);  // the grandchild reads EOF and exits
    ::close(report[0]);
    EXPECT_TRUE(gone);
}

TEST(Sampler, TreeSeesAChildForkedBetweenSnapshots) {
    Sampler tree(getpid(), true);
    const Snapshot before = tree.snapshot();
    const Snapshot again = tree.snapshot();  // nothing forked: /proc need not be re-listed
    EXPECT_EQ(before.pids, again.pids);
    const auto listings = tree.proc_listings();
    int release[2];
    ASSERT_EQ(::pipe(release), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        char byte;
        ::close(release[1]);
        (void)!::read(release[0], &byte, 1);
        ::_exit(0);
    }
    ::close(release[0]);
    const Snapshot after = tree.snapshot();
    ::close(release[1]);
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_NE(std::find(after.pids.begin(), after.pids.end(), child), after.pids.end());
    EXPECT_GT(tree.proc_listings(), listings);  // the fork allocated a pid: /proc was re-listed
}

TEST(Sampler, ForeignProcessIsOneClearError) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t parent = getpid();
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // As "nobody", sample this (root's) test process.
        ::close(pipe_fds[0]);
        std::string message = "no error";
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
            message = "setuid failed";
        } else {
            try {
                Sampler sampler(parent, false);
            } catch (const std::invalid_argument& error) {
                message = error.what();
            }
        }
        (void)!::write(pipe_fds[1], message.data(), message.size());
        ::_exit(0);
    }
    ::close(pipe_fds[1]);
    std::string message;
    char chunk[256];
    for (ssize_t n; (n = ::read(pipe_fds[0], chunk, sizeof chunk)) > 0;) message.append(chunk, static_cast<size_t>(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_EQ(message, "pid " + std::to_string(parent) + " belongs to another user: permission denied reading /proc/" +
                           std::to_string(parent) + "/fd (sample it as that user or as root)");
}

TEST(CgroupCpuParse, V2CpuStat) {
    const auto usage =
        parse_cgroup_cpu_stat("usage_usec 137900\nuser_usec 120000\nsystem_usec 17900\nnice_usec 0\nnr_periods 0\n");
    ASSERT_TRUE(usage);
    EXPECT_EQ(usage->usage_ns, 137900000u);
    EXPECT_EQ(usage->user_ns, 120000000u);
    EXPECT_EQ(usage->system_ns, 17900000u);
    // A v1 "cpu" controller's cpu.stat (throttling counters only) is not CPU usage.
    EXPECT_FALSE(parse_cgroup_cpu_stat("nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"));
    EXPECT_FALSE(parse_cgroup_cpu_stat(""));
}

TEST(CgroupCpu, MissingDirectoryIsOneClearError) {
    CgroupCpu cgroup;
    std::string why;
    EXPECT_FALSE(cgroup.open("/nonexistent/loadbench-cgroup", why));
    EXPECT_NE(why.find("/nonexistent/loadbench-cgroup"), std::string::npos);
    EXPECT_THROW(Sampler(getpid(), true, "/nonexistent/loadbench-cgroup"), std::invalid_argument);
}

namespace {

double self_and_children_cpu_s() {
    rusage self{}, children{};
    ::getrusage(RUSAGE_SELF, &self);
    ::getrusage(RUSAGE_CHILDREN, &children);
    const auto s = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; };
    return s(self.ru_utime) + s(self.ru_stime) + s(children.ru_utime) + s(children.ru_stime);
}

}  // namespace

TEST(Sampler, ReapedChildIsCountedOnceThroughItsParent) {
    // The child is seen as a member (its own clock), then exits and is reaped by this process:
    // its CPU moves into our cutime/cstime and must not be counted twice - nor lost.
    int done[2], release[2];
    ASSERT_EQ(::pipe(done), 0);
    ASSERT_EQ(::pipe(release), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(done[0]);
        ::close(release[1]);
        timespec start{}, now{};
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
        volatile unsigned long sink = 0;
        do {
            for (int i = 0; i < 100000; ++i) sink = sink + static_cast<unsigned long>(i);
            ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
        } while ((now.tv_sec - start.tv_sec) * 1e9 + (now.tv_nsec - start.tv_nsec) < 0.3e9);
        char byte = 'd';
        (void)!::write(done[1], &byte, 1);
        while (::read(release[0], &byte, 1) > 0) {
        }
        ::_exit(0);
    }
    ::close(done[1]);
    ::close(release[0]);
    Sampler tree(getpid(), true);
    const double reference_before = self_and_children_cpu_s();
    const Snapshot first = tree.snapshot();
    char byte = 0;
    ASSERT_EQ(::read(done[0], &byte, 1), 1);
    const Snapshot with_child = tree.snapshot();  // the child is a member, its burn counted
    EXPECT_NE(std::find(with_child.pids.begin(), with_child.pids.end(), child), with_child.pids.end());
    ::close(release[1]);  // the child reads EOF and exits
    int status = 0;
    ::waitpid(child, &status, 0);
    const Snapshot reaped = tree.snapshot();
    const double reference_after = self_and_children_cpu_s();
    ::close(done[0]);

    EXPECT_EQ(std::find(reaped.pids.begin(), reaped.pids.end(), child), reaped.pids.end());
    const double measured = static_cast<double>(reaped.cpu_ns - first.cpu_ns) * 1e-9;
    const double reference = reference_after - reference_before;
    EXPECT_GE(reference, 0.3);
    // Our cutime/cstime are each truncated to a tick; the child's burn counted twice would be
    // 0.3 s too much.
    EXPECT_NEAR(measured, reference, 3.0 / clock_ticks_per_second() + 0.01);
    EXPECT_GE(reaped.cpu_ns, with_child.cpu_ns);
    EXPECT_EQ(reaped.cpu_source, CpuSource::proc_clock);
}
