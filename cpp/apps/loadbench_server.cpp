// loadbench-server: the Boost.Beast reference server as its own process, so that /proc
// shows the server's CPU time and memory alone. Prints one JSON line when listening, one
// when stopped (SIGINT/SIGTERM, graceful), or one error line; see core/server/status_lines.
#include "core/server/base/options.hpp"
#include "core/server/server.hpp"
#include "core/server/status_lines.hpp"

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <pthread.h>
#include <unistd.h>

namespace {

int fail(const std::string& message, int exit_code) {
    std::printf("%s\n", loadbench::server::error_line(message).c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "loadbench-server: error: %s\n", message.c_str());
    return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace loadbench::server;
    ServerConfig config;
    try {
        const auto parsed = parse_server_args(std::vector<std::string>(argv + 1, argv + argc));
        if (parsed.help_requested) {
            std::fputs(server_usage().c_str(), stdout);
            return 0;
        }
        config = parsed.config;
    } catch (const ConfigError& e) {
        return fail(e.what(), 2);
    }

    // Block the stop signals in every thread (workers inherit the mask) and take them
    // synchronously here with sigwait: no async-signal-safety concerns.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    std::unique_ptr<Server> server;
    try {
        server = std::make_unique<Server>(config);
        server->start();
    } catch (const ConfigError& e) {
        return fail(e.what(), 2);
    } catch (const std::exception& e) {
        return fail(e.what(), 1);
    }
    std::printf("%s\n", ready_line(static_cast<long>(getpid()), config.host, server->http_port(), server->https_port(),
                                   config.workers, config.unix_path)
                            .c_str());
    std::fflush(stdout);

    int received = 0;
    sigwait(&stop_signals, &received);
    server->stop();
    std::printf("%s\n", stopped_line(server->counters()).c_str());
    std::fflush(stdout);
    return 0;
}
