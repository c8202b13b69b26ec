"""The Environment block of a report: what machine, kernel, toolchain and pinning a result
came from, as data (to_dict) and as a | Item | Value | markdown table (to_markdown)."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from . import _core
from .errors import ConfigError


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (x86 'model name', ARM 'Hardware'/'CPU part')."""
    for line in _read_text("/proc/cpuinfo").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Hardware", "cpu model", "Model") and value.strip():
            return value.strip()
    return platform.processor() or "unknown"


def memory_total_kib() -> Optional[int]:
    for line in _read_text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1])
    return None


def format_cpus(cpus: Sequence[int]) -> str:
    """{0, 1, 2, 5} -> '0-2,5' (the taskset / cpuset list form)."""
    ordered = sorted({int(c) for c in cpus})
    ranges: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        ranges.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(ranges)


def git_commit(cwd: Optional[str] = None) -> Optional[str]:
    """HEAD of the git repository holding `cwd` (with '-dirty' when it has local changes)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return head.stdout.strip() + (
            "-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else ""
        )
    except (OSError, subprocess.SubprocessError):
        return None


@dataclass
class Environment:
    host: str
    kernel: str
    cpu_model: str
    logical_cores: int
    memory_kib: Optional[int]
    loadavg_at_start: tuple[float, float, float]
    python: str
    compiler: str
    boost: str
    openssl: str
    loadbench: str
    git_commit: Optional[str]
    server_pid: Optional[int]
    server_cpus: Optional[str]  # e.g. "0-1"; None when no server is known
    generator_cpus: str
    server_pinned: Optional[bool]  # False: may run on every core, sharing them with the generator
    generator_pinned: bool

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["loadavg_at_start"] = list(self.loadavg_at_start)
        return d

    def rows(self) -> list[tuple[str, str]]:
        def pinning(cpus: Optional[str], pinned: Optional[bool]) -> str:
            if cpus is None:
                return "not known"
            return f"cores {cpus}" + ("" if pinned else " (unpinned: all cores)")

        load1, load5, load15 = self.loadavg_at_start
        rows = [
            ("Host", self.host),
            ("Kernel", self.kernel),
            ("CPU", f"{self.cpu_model} ({self.logical_cores} logical cores)"),
            ("Memory", f"{self.memory_kib} KiB" if self.memory_kib is not None else "unknown"),
            ("Machine load", f"{load1:.2f} at start (5 min {load5:.2f}, 15 min {load15:.2f})"),
            ("Python", self.python),
            ("Compiler", self.compiler),
            ("Boost", self.boost),
            ("OpenSSL", self.openssl),
            ("loadbench", self.loadbench),
            ("Commit", self.git_commit or "not in a git repository"),
            (
                "Server CPUs",
                pinning(self.server_cpus, self.server_pinned)
                + (f", pid {self.server_pid}" if self.server_pid else ""),
            ),
            ("Generator CPUs", pinning(self.generator_cpus, self.generator_pinned)),
        ]
        return rows

    def to_markdown(self) -> str:
        lines = ["| Item | Value |", "|---|---|"]
        lines += [f"| {item} | {value.replace('|', '/')} |" for item, value in self.rows()]
        return "\n".join(lines) + "\n"


def _affinity(pid: int) -> set[int]:
    try:
        return os.sched_getaffinity(pid)
    except ProcessLookupError:
        raise ConfigError(f"no process with pid {pid}: cannot read its CPU affinity") from None
    except PermissionError:
        raise ConfigError(
            f"pid {pid} belongs to another user: cannot read its CPU affinity"
        ) from None


def environment(
    server_pid: Optional[int] = None,
    generator_cpus: Optional[Sequence[int]] = None,
    server_cpus: Optional[Sequence[int]] = None,
) -> Environment:
    """Captures the machine and toolchain now. CPU sets that are not given are read from the
    processes themselves: the generator runs in this process; the server's from server_pid."""
    all_cpus = set(range(os.cpu_count() or 1))
    gen = set(generator_cpus) if generator_cpus is not None else os.sched_getaffinity(0)
    if server_cpus is not None:
        srv: Optional[set[int]] = set(server_cpus)
    elif server_pid is not None:
        srv = _affinity(int(server_pid))
    else:
        srv = None
    info = _core.build_info()
    uname = platform.uname()
    return Environment(
        host=socket.gethostname(),
        kernel=f"{uname.system} {uname.release} {uname.machine}",
        cpu_model=cpu_model(),
        logical_cores=os.cpu_count() or 1,
        memory_kib=memory_total_kib(),
        loadavg_at_start=os.getloadavg(),
        python=f"{platform.python_implementation()} {platform.python_version()}",
        compiler=info["compiler"],
        boost=info["boost"],
        openssl=info["openssl"],
        loadbench=info["version"],
        git_commit=git_commit(),
        server_pid=int(server_pid) if server_pid is not None else None,
        server_cpus=format_cpus(srv) if srv is not None else None,
        generator_cpus=format_cpus(gen),
        server_pinned=(srv != all_cpus) if srv is not None else None,
        generator_pinned=gen != all_cpus,
    )
