"""A scriptable child process for the sampler tests: it does exactly what it is told, one
command per stdin line, and answers one line ("ok ..." or "error ...") on stdout.

    burn SECONDS THREADS  burn SECONDS of CPU split over THREADS threads (thread CPU clocks)
    alloc MIB             allocate MIB mebibytes and touch every page
    free                  release the allocation
    open N / close        open N descriptors of /dev/null / close them
    spawn                 start a child running this same script; answers its pid
    child I CMD...        forward CMD to child I, answer its answer
    name NAME             set this process's command name (prctl PR_SET_NAME)
    ping                  answer "ok" (the child is up and idle)
    exit                  exit now (children see EOF on stdin and exit too)
EOF ends the process too, so a killed test never leaves one behind.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import threading
import time

allocation: bytearray | None = None
descriptors: list[int] = []
children: list[subprocess.Popen] = []


def burn(seconds: float, threads: int) -> float:
    """Each thread hashes until its own CPU clock shows its share (hashlib drops the GIL
    for large buffers, so the threads really run in parallel)."""
    share = seconds / threads
    block = b"x" * (1 << 16)

    def work() -> None:
        start = time.thread_time()
        h = hashlib.sha256()
        while time.thread_time() - start < share:
            h.update(block)

    before = time.process_time()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.process_time() - before


def handle(words: list[str]) -> str:
    global allocation
    cmd = words[0]
    if cmd == "burn":
        return f"ok {burn(float(words[1]), int(words[2])):.6f}"
    if cmd == "alloc":
        size = int(words[1]) << 20
        allocation = bytearray(size)  # large: its own mmap, returned to the kernel on free
        allocation[::4096] = b"\x01" * (size // 4096)  # touch every page
        return "ok"
    if cmd == "free":
        allocation = None
        return "ok"
    if cmd == "open":
        descriptors.extend(os.open("/dev/null", os.O_RDONLY) for _ in range(int(words[1])))
        return "ok"
    if cmd == "close":
        while descriptors:
            os.close(descriptors.pop())
        return "ok"
    if cmd == "spawn":
        child = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        children.append(child)
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("ping\n")  # answer only once the child is up and idle
        child.stdout.readline()
        return f"ok {child.pid}"
    if cmd == "child":
        child = children[int(words[1])]
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(" ".join(words[2:]) + "\n")
        reply = child.stdout.readline().strip()
        if not reply:  # EOF: it exited (as told by "exit")
            child.wait()
            return "ok exited"
        return reply
    if cmd == "name":
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(15, " ".join(words[1:]).encode(), 0, 0, 0) != 0:  # PR_SET_NAME
            return f"error prctl errno {ctypes.get_errno()}"
        return "ok"
    if cmd == "ping":
        return "ok"
    if cmd == "exit":
        os._exit(0)
    return f"error unknown command {cmd!r}"


def main() -> None:
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            reply = handle(words)
        except Exception as exc:  # report, keep serving
            reply = f"error {type(exc).__name__}: {exc}"
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
