/* A test server whose CPU profile is known: each request calls burn_cpu(), which spends ~90 %
 * of the server's CPU (tests/test_profile.py checks it is the profile's top function).
 *
 *   burn_cpu PORT ITERATIONS
 *
 * HTTP/1.1 keep-alive, a thread per connection, every request answered "200 OK" with a 2-byte
 * body. burn_cpu() runs ITERATIONS rounds of an xorshift whose result is stored in a volatile,
 * so the compiler can neither drop nor fold the loop; noinline keeps it a function of its own in
 * the profile. Everything else on the request path is a read() and a write() of a constant:
 * with ITERATIONS in the hundreds of thousands (~0.3 ms) those are a few % of the CPU.
 * Build: gcc -O1 -fno-omit-frame-pointer -g. Readiness is the port accepting; SIGTERM ends it.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>

static long iterations;
static volatile uint64_t sink;

__attribute__((noinline)) void burn_cpu(void) {
    uint64_t x = sink | 1;
    for (long i = 0; i < iterations; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink = x;
}

#define ON_REQUEST() burn_cpu()
#include "keepalive_server.h"

int main(int argc, char** argv) {
    if (argc < 3) return 2;
    int port = atoi(argv[1]);
    iterations = atol(argv[2]);
    signal(SIGPIPE, SIG_IGN);
    int listener = listen_loopback(port);
    if (listener < 0) return 1;
    for (;;) {
        int fd = accept_nodelay(listener);
        if (fd >= 0) serve_in_thread(fd);
    }
}
