"""A child process run to completion, pinned, with its own CPU time from os.wait4()'s rusage:
how every load tool (and strace, perf) runs under the bench drivers."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass
class ChildRun:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    user_s: float
    sys_s: float
    timed_out: bool = False

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s

    @property
    def busy(self) -> float:
        """Fraction of one core the child used over its lifetime (1.0 = its core saturated)."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0


def taskset(cpus: Sequence[int]) -> list[str]:
    return ["taskset", "-c", ",".join(str(c) for c in cpus)]


def run_child(
    argv: Sequence[str], timeout_s: float, env: Optional[dict[str, str]] = None
) -> ChildRun:
    """Run argv to completion; its CPU time comes from os.wait4()'s rusage, i.e. the child's
    own threads and the children it reaped, nothing of ours."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            list(argv), stdout=out, stderr=err, env=env, stdin=subprocess.DEVNULL
        )
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            proc.send_signal(signal.SIGINT)
            time.sleep(2)
            if proc.returncode is None:
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass

        timer = threading.Timer(timeout_s, on_timeout)
        timer.daemon = True
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return ChildRun(
            argv=list(argv),
            returncode=proc.returncode,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
            wall_s=wall,
            user_s=usage.ru_utime,
            sys_s=usage.ru_stime,
            timed_out=timed_out.is_set(),
        )
