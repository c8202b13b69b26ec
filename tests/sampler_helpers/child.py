"""Drives tests/sampler_helpers/proc_child.py from a test: `with Child() as c: c.cmd("burn 0.5 2")`."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

SCRIPT = Path(__file__).with_name("proc_child.py")


class Child:
    def __init__(self, timeout: float = 20.0) -> None:
        self.timeout = timeout
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.cmd("ping")  # up and idle: its start-up CPU is behind us

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def cmd(self, line: str) -> str:
        """Sends one command and returns the words after "ok"; fails the test on an error."""
        self.send(line)
        reply = self._readline()
        assert reply.startswith("ok"), f"child answered {reply!r} to {line!r}"
        return reply[2:].strip()

    def _readline(self) -> str:
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(self.timeout):
                raise TimeoutError(f"child {self.pid} did not answer within {self.timeout} s")
        finally:
            sel.close()
        return self.proc.stdout.readline().strip()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, OSError, BrokenPipeError):
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def proc_stat_fields(pid: int) -> list[str]:
    """Independent read of /proc/<pid>/stat: the fields after the command name, numbered so
    that fields[0] is field 3 (state) of proc(5)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()


def wait_for_threads(pid: int, count: int, timeout: float = 5.0) -> None:
    """Waits until the process has `count` threads: a joined thread takes a moment to leave."""
    deadline = time.monotonic() + timeout
    while int(proc_stat_fields(pid)[17]) != count:
        assert time.monotonic() < deadline, f"pid {pid} never got down to {count} threads"
        time.sleep(0.005)


def wait_until_idle(pid: int, threads: int = 1, timeout: float = 5.0) -> None:
    """Waits until the process is down to `threads` threads and every one of them sleeps.

    /proc/<pid>/stat adds a thread's CPU time as of its last scheduler update: a thread still
    on a CPU (say, between writing its answer and blocking on the next read) shows up to a
    scheduler tick less than its own clock - more when the vCPU was preempted. Once it sleeps
    its counters are final until it is woken, so two reads of an idle process agree exactly."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            states = [proc_stat_fields(int(tid))[0] for tid in os.listdir(f"/proc/{pid}/task")]
        except (FileNotFoundError, ProcessLookupError):
            # a thread left between the listing and its read: gone before the open (ENOENT), or
            # between the open and the read (ESRCH - seen once, a burn thread ending)
            states = []
        if len(states) == threads and all(state == "S" for state in states):
            return
        assert time.monotonic() < deadline, (
            f"pid {pid} never went idle with {threads} threads: {states}"
        )
        time.sleep(0.005)


def proc_cpu_s(pid: int) -> float:
    fields = proc_stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status_value(pid: int, key: str) -> Optional[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return None
