"""Shared plumbing for the bench/ drivers: peer servers, pinning, CPU accounting, statistics,
environment facts and markdown/JSONL output.

Both bench/server_vs_peers.py and bench/generator_vs_peers.py stand on this module, so a
server is launched, pinned and charged for its CPU exactly the same way in both reports.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
REPORTS_DIR = REPO_DIR / "reports"

# The benchmarks run from the environment where loadbench is installed (pip install .): its
# native server is one of the peers, and its sampler does the /proc arithmetic for every peer.
import loadbench  # noqa: E402
from loadbench import analysis  # noqa: E402
from loadbench.core.environment import environment as probe_environment  # noqa: E402


def server_window(before: Any, after: Any, responses: int) -> dict:
    """The server's block of one run (CPU, us/req, RSS, context switches, machine steal/idle
    shares) between two sampler snapshots - loadbench's own arithmetic, not a copy of it."""
    return loadbench.sampler.window(before, after, responses)


# The quiet-machine gate and the outside-CPU rule of the drivers (bench/benchgate.py).
from benchgate import (  # noqa: F401
    add_gate_args,
    foreign_cores,
    gate_note,
    is_contended,
    make_gate,
    outside_share,
    wait_quiet,
)


# ---------------------------------------------------------------------------------------
# Child processes: pinned, with their own CPU time from wait4()
# ---------------------------------------------------------------------------------------
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


def run_child(argv: Sequence[str], timeout_s: float, env: Optional[dict[str, str]] = None) -> ChildRun:
    """Run argv to completion; its CPU time comes from os.wait4()'s rusage, i.e. the child's
    own threads and the children it reaped, nothing of ours."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(list(argv), stdout=out, stderr=err, env=env, stdin=subprocess.DEVNULL)
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


# ---------------------------------------------------------------------------------------
# Peer servers
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PeerSpec:
    """A server to measure: one command line with a {port} placeholder; workers via env."""

    name: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    https: bool = False
    workers: int = 1
    version: str = ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RunningPeer:
    spec: PeerSpec
    cpus: Sequence[int]
    port: int = 0
    proc: Optional[subprocess.Popen] = field(default=None, repr=False)
    sampler: Any = field(default=None, repr=False)
    _log: Any = field(default=None, repr=False)

    def __enter__(self) -> "RunningPeer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def url(self, path: str = "/") -> str:
        scheme = "https" if self.spec.https else "http"
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, ready_timeout_s: float = 15.0) -> "RunningPeer":
        self.port = free_port()
        argv = taskset(self.cpus) + [a.replace("{port}", str(self.port)) for a in self.spec.argv]
        env = dict(os.environ, **dict(self.spec.env))
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=self._log, env=env,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + ready_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.spec.name} exited at start: {self.log_text()}")
            if self._answers():
                self.sampler = loadbench.Sampler(self.proc.pid, tree=True)
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.spec.name} did not answer GET / within {ready_timeout_s} s: {self.log_text()}")

    def _answers(self) -> bool:
        import ssl

        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                pass
            ctx = ssl._create_unverified_context() if self.spec.https else None
            with urllib.request.urlopen(self.url("/"), timeout=1, context=ctx) as resp:
                return resp.status == 200
        except OSError:
            return False

    def snapshot(self) -> Any:
        """loadbench.sampler.ProcSnapshot of the peer's whole process tree, read now."""
        return self.sampler.snapshot()

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # our own session: the peer and its children
            self.proc.wait()

    def log_text(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace").strip()[-2000:]


def start_peers(specs: Sequence[PeerSpec], cpus: Sequence[int], env: dict[str, str]) -> list[RunningPeer]:
    """Start every peer; one that fails is reported n/a in env (with its reason), never dropped silently."""
    running = []
    for spec in specs:
        peer = RunningPeer(spec, cpus)
        try:
            running.append(peer.start())
        except RuntimeError as exc:
            print(f"{spec.name}: n/a - {exc}", file=sys.stderr, flush=True)
            env[f"Server {spec.name}"] = f"n/a (did not start: {str(exc)[:200]})"
    return running


def _version_of(argv: Sequence[str], pattern: str = r"\S+") -> str:
    try:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "n/a"
    text = (out.stdout + out.stderr).strip()
    match = re.search(pattern, text)
    return match.group(0) if match else text.splitlines()[0] if text else "n/a"


def beast_binary(explicit: Optional[str] = None) -> Optional[str]:
    if explicit:
        return explicit
    try:
        return str(loadbench.server_binary())
    except loadbench.ServerError:
        return None


def beast_peer(binary: Optional[str], https: bool = False, workers: int = 1) -> Optional[PeerSpec]:
    if binary is None:
        return None
    if https:
        # Full handshakes only, as nginx here (ssl_session_cache off; ssl_session_tickets off):
        # without it the Beast server also encrypts two session tickets per handshake.
        argv = (binary, "--workers", str(workers), "--no-http", "--tls", "--no-tls-resumption", "--tls-port", "{port}")
    else:
        argv = (binary, "--workers", str(workers), "--port", "{port}")
    return PeerSpec("loadbench-server", argv, https=https, workers=workers, version=f"loadbench {loadbench.__version__}")


def nginx_peer(https: bool = False, workers: int = 1) -> Optional[PeerSpec]:
    if not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")):
        return None
    env = (("NGINX_WORKERS", str(workers)),) + ((("NGINX_TLS", "1"),) if https else ())
    version = _version_of([shutil.which("nginx") or "/usr/sbin/nginx", "-v"], r"nginx/\S+")
    return PeerSpec("nginx", ("bash", str(BENCH_DIR / "peers/nginx/run.sh"), "{port}"), env, https, workers, version)


def node_peer(workers: int = 1) -> Optional[PeerSpec]:
    node = shutil.which("node")
    if node is None:
        return None
    return PeerSpec("node:http", (node, str(BENCH_DIR / "peers/node/hello.js"), "{port}"),
                    (("NODE_WORKERS", str(workers)),), False, workers, "node " + _version_of([node, "--version"]))


# ---------------------------------------------------------------------------------------
# Statistics and formatting
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float
    count: int

    @property
    def spread_pct(self) -> float:
        """(max - min) / median: how far the repeats disagree."""
        return 100.0 * (self.high - self.low) / self.median if self.median else 0.0


def summarize(values: Iterable[Optional[float]]) -> Optional[Summary]:
    """Median (loadbench.analysis.median, the one median) with min/max of the repeats."""
    spread = analysis.median_spread(list(values))
    if spread is None:
        return None
    return Summary(spread.median, spread.min, spread.max, spread.n)


def fmt_num(value: Optional[float], digits: int = 0) -> str:
    if value is None:
        return "n/a"
    text = f"{value:,.{digits}f}"
    return text.replace(",", " ")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    return "\n".join(lines)


def best_table(header: Sequence[str], rows: list[list], lowest: Any, digits: Any) -> str:
    """rows = [[name, value, ...]]: a markdown table with each column's best value in bold.
    lowest / digits: one for every column, or a list with one per column."""
    n = len(header) - 1
    pick = lambda x, i: x[i] if isinstance(x, (list, tuple)) else x  # noqa: E731
    columns = [bold_best([row[i + 1] for row in rows], pick(lowest, i), pick(digits, i)) for i in range(n)]
    return markdown_table(header, [[row[0]] + [columns[i][j] for i in range(n)] for j, row in enumerate(rows)])


def report_head(title: str, generated_by: str, env: dict, settings: dict, raw: str) -> list[str]:
    """Every bench report opens the same way: title, where it came from, the settings and the
    environment (load at start, outside CPU) - so a reader finds them in one place in each."""
    return [f"# {title}", "",
            f"Generated {env.get('Date (UTC)', '?')} UTC by `{generated_by}`; raw data ({raw}). Do not edit by hand.",
            "", "## Settings", markdown_table(["Setting", "Value"], settings.items()),
            "", "## Environment", markdown_table(["Item", "Value"], env.items()), ""]


def versus(ours: str, a: float, theirs: str, b: float, unit: str = "us/req") -> str:
    """`ours a vs theirs b: ratio, at or below / ABOVE theirs` (lower is better)."""
    verdict = "at or below" if a <= b else "ABOVE"
    return f"{ours} {a:.2f} {unit} vs {theirs} {b:.2f} {unit}: {a / b:.2f}x, {verdict} {theirs}"


def bold_best(cells: list[Optional[float]], lowest: bool, digits: int) -> list[str]:
    """Format a row of numbers with the best one in bold (lowest or highest wins)."""
    present = [c for c in cells if c is not None]
    best = (min(present) if lowest else max(present)) if present else None
    out = []
    for cell in cells:
        text = fmt_num(cell, digits)
        out.append(f"**{text}**" if cell is not None and cell == best and len(present) > 1 else text)
    return out


def read_jsonl(path: Path) -> tuple[list[dict], dict[str, str], str]:
    """Runs, the environment block and the command line back from a bench driver's JSONL."""
    records, env, command = [], {}, "unknown"
    for line in path.read_text().splitlines():
        item = json.loads(line)
        if item.get("record") == "environment":
            env, command = item["environment"], item.get("command", command)
        else:
            records.append(item)
    return records, env, command


class JsonlWriter:
    """One JSON object a line, flushed as each measurement finishes (a crash loses nothing)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = open(path, "w")

    def write(self, record: dict) -> None:
        self._file.write(json.dumps(record, sort_keys=True) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


# ---------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------
def environment() -> dict[str, str]:
    """The machine facts a reader needs to weigh the numbers (loadbench's own environment probe)."""
    env = probe_environment()
    load1, load5, load15 = env.loadavg_at_start
    return {
        "Date (UTC)": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "Host": env.host,
        "Kernel": env.kernel,
        "CPU": f"{env.cpu_model} ({env.logical_cores} logical cores)",
        "Memory": f"{env.memory_kib} KiB",
        "Python": env.python,
        "loadbench": f"{env.loadbench} ({env.compiler}, Boost {env.boost}, {env.openssl})",
        "Commit": env.git_commit or "unknown",
        "Load average at start": f"{load1:.2f} / {load5:.2f} / {load15:.2f} (1 / 5 / 15 min)",
    }


def machine_note(load1: float, gate: Optional[dict] = None) -> str:
    """The load average at start, read with the gate's verdict: the 1-min average trails for a
    minute after earlier work ended, so a high figure with a gate that measured other processes
    quiet is that trail, not work running beside the measurement."""
    cores = os.cpu_count() or 1
    if load1 < 0.25 * cores:
        return f"quiet (load {load1:.2f} on {cores} cores)"
    if gate and not gate.get("skipped") and not gate.get("timed_out") and gate.get("quiet", True):
        return (f"load {load1:.2f} on {cores} cores at start is the 1-min average trailing earlier work: the "
                "gate measured other processes below its threshold before the run (see Load gate, and the "
                "outside-CPU figures per run)")
    return (f"SHARED: load {load1:.2f} on {cores} cores at start - other work was running on the "
            "machine, so absolute numbers carry that noise; the ranking within one repeat is fairer "
            "than across repeats")


def write_report(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# The kernel's own TCP counters (the `nstat` figures), for both ends of every loopback
# connection together: segments sent, resets sent, TIME_WAITs entered, connections opened.
TCP_COUNTERS = {("Tcp", "OutSegs"): "segments", ("Tcp", "OutRsts"): "resets", ("Tcp", "ActiveOpens"): "opens",
                ("TcpExt", "TW"): "time_waits"}


def tcp_counters(proc: Path = Path("/proc")) -> dict[str, int]:
    values: dict[str, int] = {}
    for path in (proc / "net" / "snmp", proc / "net" / "netstat"):
        try:
            lines = path.read_text().splitlines()
        except OSError:
            continue
        for names, numbers in zip(lines[::2], lines[1::2]):
            group, _, keys = names.partition(":")
            for key, value in zip(keys.split(), numbers.partition(":")[2].split()):
                if (group, key) in TCP_COUNTERS:
                    values[TCP_COUNTERS[(group, key)]] = int(value)
    return values


def tcp_per_connection(before: dict[str, int], after: dict[str, int], connections: int) -> dict[str, float]:
    """Each counter's growth over a run / the new connections the generator counted."""
    return {name: (after[name] - before[name]) / connections for name in after if name in before} if connections else {}
