/* A test server whose heap allocations per request are known: exactly K mallocs of SIZE bytes
 * per request (tests/test_allocations.py checks the allocation counter reads K).
 *
 *   k_mallocs PORT K SIZE [same|elsewhere|fork]
 *
 * HTTP/1.1 keep-alive, every request answered "200 OK" with a 2-byte body. Nothing else on the
 * request path allocates: requests are read with read() into a fixed buffer and answered with
 * write() of a constant, no stdio.
 *   same       a thread per connection mallocs K blocks and frees them itself (default)
 *   elsewhere  the connection thread mallocs, a single freeing thread frees (pointers by pipe):
 *              frees from another thread than the one that allocated. The connection thread
 *              answers only once its blocks are freed: a window's edge then never falls
 *              between a request's mallocs and its frees, whatever the scheduler does (a
 *              freeing thread that merely trailed behind left thousands of blocks unfreed at
 *              the edge of a window on a busy machine - the counter right, the test wrong).
 *   fork       a process per connection (fork after accept), each mallocs and frees itself
 * Prints nothing; readiness is the port accepting. SIGTERM ends it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int k_blocks;
static size_t block_size;
static int free_pipe[2] = {-1, -1};

/* What the connection thread hands the freeing thread: a block, and whom to tell it is freed
 * (smaller than PIPE_BUF, so each write is one atomic message). */
struct handoff {
    void* block;
    sem_t* freed;
};

static void* freer(void* unused) {
    (void)unused;
    struct handoff h;
    while (read(free_pipe[0], &h, sizeof h) == (ssize_t)sizeof h) {
        free(h.block);
        sem_post(h.freed);
    }
    return NULL;
}

/* One request's allocations: each block written to, so no compiler may elide the pair. */
static void allocate_for_request(void) {
    sem_t freed; /* no allocation: the semaphore lives on this stack */
    if (free_pipe[1] >= 0 && sem_init(&freed, 0, 0) != 0) _exit(5);
    for (int i = 0; i < k_blocks; ++i) {
        char* volatile block = malloc(block_size);
        if (block == NULL) _exit(3);
        block[0] = (char)i;
        if (free_pipe[1] >= 0) {
            struct handoff h = {block, &freed};
            if (write(free_pipe[1], &h, sizeof h) != (ssize_t)sizeof h) _exit(4);
        } else {
            free(block);
        }
    }
    if (free_pipe[1] >= 0) {
        for (int i = 0; i < k_blocks; ++i)
            while (sem_wait(&freed) != 0) {
            }
        sem_destroy(&freed);
    }
}

#define ON_REQUEST() allocate_for_request()
#include "keepalive_server.h"

int main(int argc, char** argv) {
    if (argc < 4) return 2;
    int port = atoi(argv[1]);
    k_blocks = atoi(argv[2]);
    block_size = (size_t)atol(argv[3]);
    const char* mode = argc > 4 ? argv[4] : "same";
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(mode, "fork") == 0) signal(SIGCHLD, SIG_IGN); /* children reaped by the kernel */
    if (strcmp(mode, "elsewhere") == 0) {
        pthread_t t;
        if (pipe(free_pipe) != 0 || pthread_create(&t, NULL, freer, NULL) != 0) return 1;
    }
    int listener = listen_loopback(port);
    if (listener < 0) return 1;
    for (;;) {
        int fd = accept_nodelay(listener);
        if (fd < 0) continue;
        if (strcmp(mode, "fork") == 0) {
            pid_t child = fork();
            if (child == 0) {
                close(listener);
                serve(fd);
                _exit(0);
            }
            close(fd);
        } else {
            serve_in_thread(fd);
        }
    }
}
