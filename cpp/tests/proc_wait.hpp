#pragma once
// What the sampler's tests share about a child process: a /proc file's text, and waiting until
// the child sleeps (blocked in its next read()), when every counter has taken what it ran.
#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "core/sampler/proc_stat.hpp"

namespace loadbench::sampler::testing {

inline std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Waits (up to 5 s) until `pid` sleeps. /proc/<pid>/stat counts a thread's CPU time as of its
// last scheduler update, so a process still on a CPU - say between writing "done" and blocking
// on its next read - shows up to a tick (more when its vCPU was preempted) less than its own
// clock; and a system call counter has not yet seen the entry of the read it is about to block
// in. Once it sleeps, its counters hold everything it ran.
inline bool wait_until_sleeping(pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
        const auto stat = parse_proc_stat(read_file("/proc/" + std::to_string(pid) + "/stat"));
        if (stat && stat->state == 'S') return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
}

}  // namespace loadbench::sampler::testing
