"""Multi-process HTTP servers whose processes come and go, with their own CPU clocks as the
reference the sampler is checked against.

    forking_server.py PORT MODE RUSAGE_FILE [--burn-ms MS] [--max-requests N] [--workers N]
                      [--shared-mib MIB]

MODE
  fork     one child per connection (Apache prefork without reuse, inetd): the child reads the
           request, burns --burn-ms of CPU on its own clock, answers, closes and exits; the
           master reaps children as it accepts.
  replace  one worker at a time accepts and serves keep-alive requests (burning --burn-ms
           each); after --max-requests it answers "Connection: close" and exits, and the master
           forks the next (gunicorn --max-requests, php-fpm pm.max_requests).
  shared   the master fills --shared-mib MiB and forks --workers workers that share those pages
           copy-on-write and serve keep-alive requests (nginx, gunicorn --preload).

SIGUSR1 makes the master settle its accounts: stop its workers (replace/shared: SIGTERM; fork:
wait for the running children), reap them all, and write its own getrusage(SELF) and
getrusage(CHILDREN) - every reaped descendant's CPU, us resolution - as JSON to RUSAGE_FILE;
replace/shared then fork fresh workers. The sum of the two is the whole tree's CPU so far.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import sys
import time

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n%s\r\nok\n"


def burn(ms: float) -> None:
    start = time.process_time()
    while time.process_time() - start < ms / 1000.0:
        sum(range(200))


def read_request(conn: socket.socket, buf: bytearray) -> bool:
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(4096)
        if not chunk:
            return False
        buf += chunk
    del buf[: buf.index(b"\r\n\r\n") + 4]
    return True


def serve_connection(conn: socket.socket, burn_ms: float, budget: int) -> int:
    """Keep-alive requests until the peer closes or `budget` requests were served."""
    buf = bytearray()
    served = 0
    while served < budget and read_request(conn, buf):
        burn(burn_ms)
        served += 1
        last = served >= budget
        conn.sendall(RESPONSE % (b"Connection: close\r\n" if last else b""))
    return served


def worker_loop(listener: socket.socket, burn_ms: float, max_requests: int) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    signal.pthread_sigmask(
        signal.SIG_UNBLOCK, {signal.SIGUSR1}
    )  # forked while the master blocked it
    left = max_requests
    while left > 0:
        conn, _ = listener.accept()
        with conn:
            try:
                left -= serve_connection(conn, burn_ms, left)
            except OSError:
                pass
    os._exit(0)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("mode", choices=["fork", "replace", "shared"])
    p.add_argument("rusage_file")
    p.add_argument("--burn-ms", type=float, default=0.0)
    p.add_argument("--max-requests", type=int, default=50)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--shared-mib", type=int, default=0)
    args = p.parse_args()

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(1024)
    shared = b""
    if args.shared_mib:
        shared = os.urandom(1 << 20) * args.shared_mib  # written while made: every page resident
    workers: set[int] = set()
    worker_budget = args.max_requests if args.mode == "replace" else 1 << 62

    def spawn() -> None:
        pid = os.fork()
        if pid == 0:
            worker_loop(listener, args.burn_ms, worker_budget)
        workers.add(pid)

    def start_workers() -> None:
        for _ in range(1 if args.mode == "replace" else args.workers):
            spawn()

    def settle(signum: int, frame: object) -> None:
        if args.mode != "fork":
            for pid in workers:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        while True:  # reap everything: the children's CPU moves into RUSAGE_CHILDREN
            try:
                pid, _ = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            workers.discard(pid)
        me, kids = (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
        tmp = args.rusage_file + ".tmp"
        with open(tmp, "w") as out:
            json.dump(
                {
                    "self_s": me.ru_utime + me.ru_stime,
                    "children_s": kids.ru_utime + kids.ru_stime,
                    "shared_bytes": len(shared),
                },
                out,
            )
        os.rename(tmp, args.rusage_file)
        workers.clear()  # all reaped (one the main loop had just reaped included)
        if args.mode != "fork":
            start_workers()

    signal.signal(signal.SIGUSR1, settle)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    if args.mode == "fork":
        while True:
            conn, _ = listener.accept()
            pid = os.fork()
            if pid == 0:
                listener.close()
                try:
                    serve_connection(conn, args.burn_ms, 1)
                except OSError:
                    pass
                os._exit(0)
            conn.close()
            while True:  # reap what has finished; the rest at the next accept
                try:
                    done, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if done == 0:
                    break
    start_workers()
    while True:  # replace: a worker that used up its budget is replaced
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            time.sleep(0.01)
            continue
        # A settle that ran just before this point replaced every worker already.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        try:
            if pid in workers:
                workers.discard(pid)
                spawn()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})


if __name__ == "__main__":
    main()
