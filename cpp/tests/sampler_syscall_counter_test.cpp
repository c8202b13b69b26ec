// Unit tests of the system-call counter against children of this test process: the refusal
// path (no tracepoint id), exact counts of a child's known calls, inheritance by processes it
// forks after counting began, and which new processes get counters of their own.
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/sampler/proc_stat.hpp"
#include "core/sampler/syscall_counter.hpp"
#include "proc_wait.hpp"

using namespace loadbench::sampler;
using loadbench::sampler::testing::read_file;
using loadbench::sampler::testing::wait_until_sleeping;

namespace {

std::uint64_t start_ticks_of(pid_t pid) {
    const std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");
    const auto stat = parse_proc_stat(text);
    return stat ? stat->starttime_ticks : 0;
}

// A child that, per byte read from `go`, makes `calls` getppid() calls - forking a grandchild
// to make them when `in_grandchild` - then writes a byte to `done`. It exits when `go` closes.
struct Child {
    pid_t pid = -1;
    int go = -1;
    int done = -1;

    Child(int calls, bool in_grandchild) {
        int go_pipe[2], done_pipe[2];
        if (::pipe(go_pipe) != 0 || ::pipe(done_pipe) != 0) return;
        pid = ::fork();
        if (pid == 0) {
            ::close(go_pipe[1]);
            ::close(done_pipe[0]);
            char byte = 0;
            while (::read(go_pipe[0], &byte, 1) == 1) {
                if (in_grandchild) {
                    const pid_t grandchild = ::fork();
                    if (grandchild == 0) {
                        for (int i = 0; i < calls; ++i) ::syscall(SYS_getppid);
                        ::_exit(0);
                    }
                    int status = 0;
                    ::waitpid(grandchild, &status, 0);
                } else {
                    for (int i = 0; i < calls; ++i) ::syscall(SYS_getppid);
                }
                if (::write(done_pipe[1], &byte, 1) != 1) ::_exit(1);
            }
            ::_exit(0);
        }
        ::close(go_pipe[0]);
        ::close(done_pipe[1]);
        go = go_pipe[1];
        done = done_pipe[0];
    }
    // One round: returns once the child is blocked in its next read of `go`.
    bool round() {
        char byte = 'g';
        return ::write(go, &byte, 1) == 1 && ::read(done, &byte, 1) == 1 && wait_until_sleeping(pid);
    }
    ~Child() {
        ::close(go);
        ::close(done);
        int status = 0;
        if (pid > 0) ::waitpid(pid, &status, 0);
    }
};

}  // namespace

TEST(SyscallCounter, UnreadableTracepointIdIsAReasonNotAZero) {
    SyscallCounter counter(true, "/nonexistent/raw_syscalls/sys_enter/id");
    EXPECT_FALSE(counter.available());
    EXPECT_NE(counter.why().find("/nonexistent/raw_syscalls/sys_enter/id"), std::string::npos) << counter.why();
    EXPECT_NE(counter.why().find("No such file"), std::string::npos) << counter.why();
    counter.add_process(getpid(), getppid(), start_ticks_of(getpid()));
    EXPECT_EQ(counter.counters(), 0u);
    EXPECT_FALSE(counter.read());
}

TEST(SyscallCounter, MalformedTracepointIdIsAReason) {
    char path[] = "/tmp/loadbench-syscall-id-XXXXXX";
    const int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "none\n", 5), 5);
    ::close(fd);
    SyscallCounter counter(true, path);
    ::unlink(path);
    EXPECT_FALSE(counter.available());
    EXPECT_NE(counter.why().find(path), std::string::npos) << counter.why();
}

// The calls `counter` saw during one round of `child` (nullopt: a reading or the round failed).
std::optional<std::uint64_t> one_round(SyscallCounter& counter, Child& child) {
    const auto before = counter.read();
    if (!before || !child.round()) return std::nullopt;
    const auto after = counter.read();
    if (!after) return std::nullopt;
    return *after - *before;
}

TEST(SyscallCounter, CountsAChildsCallsExactly) {
    Child child(1000, false);
    ASSERT_GT(child.pid, 0);
    ASSERT_TRUE(wait_until_sleeping(child.pid));
    SyscallCounter counter(true);
    counter.add_process(child.pid, getpid(), start_ticks_of(child.pid));
    if (!counter.available()) GTEST_SKIP() << counter.why();
    // the read() that returned the byte entered before counting; then 1000 getppid, one
    // write() and the entry of the next read(), which it now blocks in
    EXPECT_EQ(one_round(counter, child), std::optional<std::uint64_t>(1002u));
    // the same again: nothing else is counted
    EXPECT_EQ(one_round(counter, child), std::optional<std::uint64_t>(1002u));
}

TEST(SyscallCounter, ProcessesForkedLaterAreCountedByInheritanceUnlessTreeIsOff) {
    for (const bool follow : {true, false}) {
        Child child(5000, true);
        ASSERT_GT(child.pid, 0);
        ASSERT_TRUE(wait_until_sleeping(child.pid));
        SyscallCounter counter(follow);
        counter.add_process(child.pid, getpid(), start_ticks_of(child.pid));
        if (!counter.available()) GTEST_SKIP() << counter.why();
        const auto calls = one_round(counter, child);
        ASSERT_TRUE(calls);
        // the child's fork, wait and pipe calls are a handful, the grandchild's 5000 getppid
        // reach the child's counter once the grandchild has exited - only when processes inherit
        if (follow) {
            EXPECT_GE(*calls, 5000u);
            EXPECT_LE(*calls, 5000u + 50u);
        } else {
            EXPECT_LE(*calls, 50u);
        }
    }
}

TEST(SyscallCounter, OnlyProcessesStartedBeforeTheirParentWasCountedGetCounters) {
    Child first(1, false), second(1, false);
    ASSERT_GT(first.pid, 0);
    ASSERT_GT(second.pid, 0);
    SyscallCounter counter(true);
    counter.add_process(first.pid, getpid(), start_ticks_of(first.pid));
    if (!counter.available()) GTEST_SKIP() << counter.why();
    const std::size_t one = counter.counters();
    EXPECT_EQ(one, 1u);  // one thread
    // a process its parent forked after the parent was counted is counted already
    counter.add_process(999999, first.pid, boot_time_ticks() + 1000);
    EXPECT_EQ(counter.counters(), one);
    // one that started before (here: a sibling, its parent not counted, compared with the first
    // counted process) is no counted thread's descendant: it gets its own counter
    counter.add_process(second.pid, getpid(), 0);
    EXPECT_EQ(counter.counters(), one + 1);
    counter.add_process(second.pid, getpid(), 0);  // once
    EXPECT_EQ(counter.counters(), one + 1);
}
