/* What the C test servers with a known cost per request share (burn_cpu.c, k_mallocs.c): an
 * HTTP/1.1 keep-alive request loop that answers every request "200 OK" with a 2-byte body, a
 * thread per connection, and a listener on 127.0.0.1. Nothing here allocates or prints: the
 * request path is read() into a fixed buffer, the server's own work, write() of a constant.
 *
 * Define ON_REQUEST() - the server's known work per request - before including this file. A
 * macro, not a callback: the work's function is called straight from serve(), so a CPU profile
 * unwinds it to serve's callers with no frame of ours between (tests/test_profile.py). */
#ifndef ON_REQUEST
#error "define ON_REQUEST() before including keepalive_server.h"
#endif
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";

/* Serves one keep-alive connection: a request ends with an empty line (GET only). noinline: the
 * request path is a frame of its own in a profile. */
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
            ON_REQUEST();
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

/* A detached thread serves `fd` (closed when no thread can be made). */
static void serve_in_thread(int fd) {
    pthread_t t;
    if (pthread_create(&t, NULL, connection_thread, (void*)(intptr_t)fd) != 0) close(fd);
    else pthread_detach(t);
}

/* Listens on 127.0.0.1:port; -1 when it cannot. */
static int listen_loopback(int port) {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 512) != 0) return -1;
    return listener;
}

/* The next connection, with Nagle's algorithm off (-1: accept failed, try again). */
static int accept_nodelay(int listener) {
    int fd = accept(listener, NULL, NULL);
    int one = 1;
    if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}
