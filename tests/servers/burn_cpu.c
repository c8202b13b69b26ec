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
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static long iterations;
static volatile uint64_t sink;
static const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";

__attribute__((noinline)) void burn_cpu(void) {
    uint64_t x = sink | 1;
    for (long i = 0; i < iterations; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink = x;
}

/* noinline: the request path is a frame of its own, the caller burn_cpu is unwound to */
__attribute__((noinline)) static void serve(int fd) {
    char buf[8192];
    size_t have = 0;
    for (;;) {
        ssize_t got = read(fd, buf + have, sizeof buf - have);
        if (got <= 0) break;
        have += (size_t)got;
        char* end;
        while ((end = memmem(buf, have, "\r\n\r\n", 4)) != NULL) {
            size_t used = (size_t)(end - buf) + 4;
            burn_cpu();
            if (write(fd, response, sizeof response - 1) != (ssize_t)(sizeof response - 1)) goto done;
            memmove(buf, buf + used, have - used);
            have -= used;
        }
        if (have == sizeof buf) break;
    }
done:
    close(fd);
}

static void* connection_thread(void* arg) {
    serve((int)(intptr_t)arg);
    return NULL;
}

int main(int argc, char** argv) {
    if (argc < 3) return 2;
    int port = atoi(argv[1]);
    iterations = atol(argv[2]);
    signal(SIGPIPE, SIG_IGN);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 512) != 0) return 1;
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) continue;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        if (pthread_create(&t, NULL, connection_thread, (void*)(intptr_t)fd) != 0) close(fd);
        else pthread_detach(t);
    }
}
