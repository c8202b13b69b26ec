/* A server whose system calls per request are known by construction: blocking, one connection
 * at a time, HTTP/1.1 keep-alive; per request exactly one read() of the request, K - 2
 * getppid() system calls and one write() of a fixed response - K in all. Usage: k_syscalls K
 * (it listens on 127.0.0.1, an ephemeral port it prints on stdout). The accept and close of a
 * connection are outside a run's window when it warms up on the same connection. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char RESPONSE[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n";

int main(int argc, char** argv) {
    if (argc != 2 || atoi(argv[1]) < 2) {
        fprintf(stderr, "usage: k_syscalls K (K >= 2)\n");
        return 2;
    }
    const int k = atoi(argv[1]);
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 16) != 0 ||
        getsockname(listener, (struct sockaddr*)&addr, &len) != 0) {
        perror("k_syscalls: listen");
        return 1;
    }
    printf("%d\n", ntohs(addr.sin_port));
    fflush(stdout);
    static char request[65536];
    for (;;) {
        const int fd = accept(listener, NULL, NULL);
        if (fd < 0) continue;
        /* The generator writes each request whole and sends the next only after this answer
         * (one connection, closed loop), so one read() holds exactly one request; a partial one
         * would show as more reads per request, not be hidden. */
        while (read(fd, request, sizeof request) > 0) {
            for (int i = 0; i < k - 2; ++i) syscall(SYS_getppid);
            if (write(fd, RESPONSE, sizeof RESPONSE - 1) != (ssize_t)(sizeof RESPONSE - 1)) break;
        }
        close(fd);
    }
}
