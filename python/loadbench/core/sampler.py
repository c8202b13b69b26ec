"""Server CPU time, memory, fds and machine noise, read externally from /proc.

    s = loadbench.Sampler(pid, interval=0.1, tree=True)
    start = s.snapshot()            # exact, synchronous: take one at each edge of a window
    ...
    end = s.snapshot()
    server = loadbench.sampler.window(start, end, responses=12345)

    with loadbench.Sampler(pid) as s:   # background series, one sample per interval
        ...
    s.timeseries()   # pandas DataFrame, one row per sample
    s.totals()       # dict: CPU, peak RSS, fds, context switches, machine shares

CPU us/req = server CPU time in the window / exact responses in the window - never
rps x duration. Where the tree's CPU comes from is `cpu_source`, best first:

- "cgroup-v2" / "cgroup-v1": the server runs in a cgroup loadbench made for it (ServerProcess,
  sweep targets, `loadbench serve`): the kernel's own accounting of every process that ever ran
  in it, children that forked and exited between two readings included (us / ns resolution).
- "proc-clock": each member's CPU clock (ns, all its threads, exited ones included) plus the
  CPU of the children members reaped (cutime/cstime, 10 ms ticks); a child reaped by a member
  is counted once, through its parent.
- "proc-ticks": the same from utime/stime ticks when the kernel gives no CPU clock.

Other processes: each snapshot also reads the CPU of every process on the machine
(:class:`MachineProcesses`), and a window's `others_cpu_s` is what the processes that are not
the run's - not the sampled tree, not the measuring process with its generator and sampler
threads - used between its edges (:func:`others_cpu`). That, not the machine's busy time, is
what marks a window contended: /proc/stat's busy time is sampled by the tick against a precise
idle time, its columns do not add up to wall time, and busy as a share of them minus our
precise CPU read as 5-8 % "other processes" on a quiet 2-core machine
(bench/contention_accounting.py). Kernel threads are reported apart (`kernel_threads_cpu_s`).

Allocations (opt-in, loadbench.core.allocations): a tree started with the allocation counter
has `allocations` in each snapshot and a window's `allocations` block (calls, frees, bytes, per
response, or "n/a" with the reason where the counter cannot see the heap).

System calls (on by default where the kernel allows): one perf counter per thread of the tree on
the tracepoint raw_syscalls:sys_enter, inherited by the threads and processes they create, read
at the same moment as the CPU; a window's `syscalls` and `syscalls_per_req` (the CPU's divisor).
Where tracefs (which holds the tracepoint's id) is not mounted, a root loadbench mounts it
(core/tracefs.py). Where the kernel refuses (no tracefs it may mount, perf_event_paranoid, a
container's seccomp filter) there is no number but `syscalls_na`, the reason. `ctx_switches_per_req` (voluntary + involuntary,
from /proc/PID/task/TID/status) beside it. The environment variable
LOADBENCH_SYSCALLS_TRACEPOINT_ID names another file to read the tracepoint id from (a test
points it at an unreadable one to see the refusal).

Memory: `rss_kib` (the tree's summed RSS now), `rss_max_kib` (the largest summed RSS of all
readings since the previous snapshot - with a background series running, the peak of the
window as sampled), `pss_kib` (summed proportional set size, /proc/PID/smaps_rollup: shared
pages counted once over the tree; snapshots only), `rss_peak_kib` (sum of members' lifetime
VmHWM - peaks at different moments added, shared pages once per process: an upper bound).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterable, Optional

from . import _core
from .allocations import allocation_dir_of, window_allocations
from .cgroup import cgroup_of
from .errors import ConfigError
from .executables import executables_of
from .tracefs import ensure_sys_enter_id, sys_enter_id_path

_MACHINE_FIELDS = (
    "user_s",
    "nice_s",
    "system_s",
    "idle_s",
    "iowait_s",
    "irq_s",
    "softirq_s",
    "steal_s",
)


@dataclass(frozen=True)
class MachineSnapshot:
    """CPU seconds of the whole machine (all cores) since boot, from /proc/stat."""

    user_s: float
    nice_s: float
    system_s: float
    idle_s: float
    iowait_s: float
    irq_s: float
    softirq_s: float
    steal_s: float
    loadavg_1m: float

    @property
    def total_s(self) -> float:
        return sum(getattr(self, name) for name in _MACHINE_FIELDS)


@dataclass(frozen=True)
class ProcessCpu:
    """One process at one reading: CPU seconds of its own (every thread, live and exited) and of
    the children it reaped, and who it is."""

    ppid: int
    start_ticks: int  # with the pid, identifies the process across readings
    cpu_s: float
    command: str
    kernel_thread: bool


@dataclass(frozen=True)
class MachineProcesses:
    """Every process on the machine and the CPU it has used, at one instant (pid ->
    :class:`ProcessCpu`); the seconds since boot then, and the machine's steal time so far (CPU
    the hypervisor gave to other guests while ours wanted to run: another machine's process,
    for a benchmark)."""

    t: float
    cpu: dict
    steal_s: Optional[float] = None
    uptime_s: Optional[float] = None

    @classmethod
    def read(cls) -> "MachineProcesses":
        rows = _core.machine_processes()
        return cls(
            time.monotonic(),
            {
                pid: ProcessCpu(ppid, start, cpu_s, comm, kernel)
                for pid, ppid, start, cpu_s, comm, kernel in rows
            },
            _steal_s(),
            _uptime_s(),
        )


def _uptime_s() -> Optional[float]:
    try:
        with open("/proc/uptime", encoding="ascii") as fh:
            return float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _steal_s() -> Optional[float]:
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
        return float(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else None
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class OthersCpu:
    """What processes other than the run's used between two :class:`MachineProcesses` readings.

    ``cpu_s`` counts user-space processes: a busy loop, a build (its compilers, once reaped by
    make, in make's time), a browser. ``steal_s``: the hypervisor's steal meanwhile (other
    guests on the host), which takes CPU from the run as surely. ``kernel_cpu_s`` is the
    kernel's own threads, apart: on a benchmark's loopback they do its work (softirq packets
    that spill over to ksoftirqd, RCU frees of the sockets a connection-per-request cell
    closes), so they are shown, not counted as competition. ``top``: the user-space commands
    that used the most, largest first."""

    cpu_s: float
    kernel_cpu_s: float
    top: list
    steal_s: float = 0.0

    @property
    def competing_s(self) -> float:
        """What competed with the run: other processes and the hypervisor's steal."""
        return self.cpu_s + self.steal_s


CPUS = os.cpu_count() or 1


def used_between(before: MachineProcesses, after: MachineProcesses) -> dict[int, float]:
    """pid -> CPU seconds each process of ``after`` used between the two readings.

    A process seen at both is counted by its growth. Its growth includes the whole life of the
    descendants it reaped meanwhile (cutime/cstime, theirs included), so what they had used by the
    first reading is taken off again: a build's compiler that ran 20 s and exits inside a 1 s
    window adds only its last second to make's figure. A process born in between is counted with all it
    used (its whole life lies in between); one that the first reading missed although it was
    already running (a read that failed) with at most one CPU over the span. No process is
    counted with more than every CPU of the machine over the span."""
    elapsed = max(0.0, after.t - before.t)
    ticks = os.sysconf("SC_CLK_TCK")

    def alive(pid: int) -> bool:
        return (
            pid in before.cpu
            and pid in after.cpu
            and after.cpu[pid].start_ticks == before.cpu[pid].start_ticks
        )

    def reaper(proc: ProcessCpu) -> int:
        """The nearest ancestor alive at both readings: a compiler reaped by its gcc driver, which
        make reaps in turn, ends in make's time; an orphan's in init's."""
        parent, seen = proc.ppid, set()
        while parent in before.cpu and not alive(parent) and parent not in seen:
            seen.add(parent)
            parent = before.cpu[parent].ppid
        return parent if alive(parent) else 1

    reaped_before: dict[
        int, float
    ] = {}  # reaper -> what its descendants that left had used by `before`
    for pid, proc in before.cpu.items():
        if not alive(pid):
            who = reaper(proc)
            reaped_before[who] = reaped_before.get(who, 0.0) + proc.cpu_s
    out: dict[int, float] = {}
    for pid, proc in after.cpu.items():
        prev = before.cpu.get(pid)
        if prev is not None and prev.start_ticks == proc.start_ticks:
            used = proc.cpu_s - prev.cpu_s - reaped_before.get(pid, 0.0)
        elif before.uptime_s is not None and proc.start_ticks / ticks < before.uptime_s - 0.05:
            used = min(proc.cpu_s, elapsed)  # running at the first reading, but not read then
        else:
            used = proc.cpu_s
        # no process uses more than every CPU for the whole span, whatever its counters said
        out[pid] = min(max(0.0, used), elapsed * CPUS)
    return out


def others_cpu(
    before: MachineProcesses, after: MachineProcesses, ours: Iterable[int] = ()
) -> OthersCpu:
    """The CPU that processes other than ``ours`` and this one used between two readings
    (per process as :func:`used_between` counts it)."""
    mine = set(ours) | {os.getpid()}
    user = kernel = 0.0
    by: dict[str, float] = {}
    for pid, used in used_between(before, after).items():
        if pid in mine or used <= 0:
            continue
        proc = after.cpu[pid]
        if proc.kernel_thread:
            kernel += used
        else:
            user += used
            by[proc.command] = by.get(proc.command, 0.0) + used
    steal = (
        (after.steal_s - before.steal_s)
        if after.steal_s is not None and before.steal_s is not None
        else 0.0
    )
    return OthersCpu(user, kernel, sorted(by.items(), key=lambda item: -item[1]), max(0.0, steal))


@dataclass(frozen=True)
class ProcSnapshot:
    """The sampled process (tree) at one instant. Counters (cpu, ctx) are totals since start
    of each process and include members that have left the tree; the rest are gauges."""

    t: float  # time.monotonic() seconds
    cpu_s: float
    utime_s: float
    stime_s: float
    rss_kib: int
    rss_peak_kib: int
    fds: int
    threads: int
    ctx_voluntary: int
    ctx_involuntary: int
    pids: list[int]
    exited: bool
    machine: MachineSnapshot
    pid: int = 0  # the sampled (root) process
    cpu_source: str = "proc-ticks"  # see the module docstring
    rss_max_kib: int = 0  # largest summed RSS of the readings since the previous snapshot
    pss_kib: Optional[int] = None  # summed Pss of the live members; None when unreadable
    # the allocation counter's sums over the tree ({calls, frees, bytes, pids}; None: not counted)
    allocations: Optional[dict] = None
    # every process's CPU, read right after the tree and the machine (None: not read)
    processes: Optional[MachineProcesses] = field(default=None, repr=False, compare=False)
    # a generator's count of every response so far at the tree's read (Sampler.snapshot)
    completed: Optional[float] = None
    # the tree's system calls since counting began (read with the CPU), or why not counted
    syscalls: Optional[int] = None
    syscalls_na: Optional[str] = None

    @classmethod
    def from_core(cls, raw: dict, pid: int) -> ProcSnapshot:
        values = dict(raw, pid=pid)
        values["machine"] = MachineSnapshot(**raw["machine"])
        values["pids"] = list(raw["pids"])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("processes", None)
        return out


def machine_shares(start: MachineSnapshot, end: MachineSnapshot) -> dict[str, Optional[float]]:
    """Shares (0..1) of all the machine's CPU time between two snapshots."""
    total = end.total_s - start.total_s
    if total <= 0:
        return {"steal_share": None, "idle_share": None, "iowait_share": None, "busy_share": None}

    def share(name: str) -> float:
        return max(0.0, getattr(end, name) - getattr(start, name)) / total

    idle, iowait, steal = share("idle_s"), share("iowait_s"), share("steal_s")
    return {
        "steal_share": steal,
        "idle_share": idle,
        "iowait_share": iowait,
        "busy_share": max(0.0, 1.0 - idle - iowait - steal),
    }


def cores_of(pids: Iterable[int]) -> Optional[int]:
    """How many CPUs the processes may run on together (the union of their affinities): the
    cores a server's tree could keep busy, for its busy share and its CPU ceiling
    (core/limits.py). None when none of them can be read (all exited)."""
    cpus: set[int] = set()
    for pid in set(pids):
        try:
            cpus |= os.sched_getaffinity(pid)
        except OSError:
            continue
    return len(cpus) or None


def window(
    start: ProcSnapshot,
    end: ProcSnapshot,
    responses: int,
    also_ours: Iterable[int] = (),
    run_start_allocations: Optional[dict] = None,
    connections: int = 0,
    span_responses: Optional[int] = None,
) -> dict[str, Any]:
    """The `server` block of a run: what the server spent between two snapshots, and what
    processes other than the run's used meanwhile (``also_ours``: more pids of the run, e.g. the
    local shards of a distributed run). ``run_start_allocations``: the allocation counter's sums
    when the run started (see :func:`loadbench.core.allocations.window_allocations`).
    ``span_responses``: the responses completed between the two snapshots (see
    :class:`WindowEdges`), the per-request figures' divisor; without it, ``responses`` (the
    window's exact count)."""
    per_request = span_responses if span_responses is not None else responses
    cpu_s = max(0.0, end.cpu_s - start.cpu_s)
    others: dict[str, Any] = {}
    if start.processes is not None and end.processes is not None:
        ours = set(start.pids) | set(end.pids) | set(also_ours)
        found = others_cpu(start.processes, end.processes, ours)
        others = {
            "others_cpu_s": found.cpu_s,
            "steal_s": found.steal_s,
            "kernel_threads_cpu_s": found.kernel_cpu_s,
            "others_top": [
                {"command": comm, "cpu_s": round(used, 6)} for comm, used in found.top[:3]
            ],
        }
    allocations = None
    if start.allocations is not None and end.allocations is not None:
        live = {  # to name a live process that did not load the counter
            pid: (
                end.processes.cpu[pid].command
                if end.processes and pid in end.processes.cpu
                else "?"
            )
            for pid in ([] if end.exited else end.pids)
        }
        allocations = window_allocations(
            start.allocations,
            end.allocations,
            per_request,
            live,
            run_start_allocations,
            connections,
        )
    voluntary = end.ctx_voluntary - start.ctx_voluntary
    involuntary = end.ctx_involuntary - start.ctx_involuntary
    return {
        "pid": start.pid or end.pid,
        "pids": sorted(set(start.pids) | set(end.pids)),
        "cpu_s": cpu_s,
        "cpu_us_per_req": cpu_s * 1e6 / per_request if per_request > 0 else None,
        "span_responses": span_responses,
        "cpu_source": end.cpu_source
        if end.cpu_source == start.cpu_source
        else f"{start.cpu_source}/{end.cpu_source}",
        "utime_s": max(0.0, end.utime_s - start.utime_s),
        "stime_s": max(0.0, end.stime_s - start.stime_s),
        "rss_kib": end.rss_kib,
        "rss_max_kib": max(start.rss_kib, end.rss_max_kib),
        "pss_kib": end.pss_kib if not end.exited else None,
        "rss_peak_kib": max(start.rss_peak_kib, end.rss_peak_kib),
        "fds_start": start.fds,
        "fds_end": end.fds,
        "threads": end.threads if not end.exited else start.threads,
        "ctx_switches": voluntary + involuntary,
        "ctx_switches_voluntary": voluntary,
        "ctx_switches_involuntary": involuntary,
        "ctx_switches_per_req": _per(voluntary + involuntary, per_request),
        **window_syscalls(start, end, per_request),
        "exited": end.exited,
        "window_s": end.t - start.t,
        "cores": cores_of(list(start.pids) + list(end.pids)),
        "machine": machine_shares(start.machine, end.machine),
        **({"allocations": allocations} if allocations is not None else {}),
        # which binaries (and scripts) were measured, with their SHA-256
        "executables": executables_of(list(start.pids) + list(end.pids)),
        **others,
    }


def _per(count: Optional[float], requests: int) -> Optional[float]:
    return count / requests if count is not None and requests > 0 else None


def window_syscalls(start: ProcSnapshot, end: ProcSnapshot, per_request: int) -> dict[str, Any]:
    """The window's system calls: ``syscalls`` (end - start), ``syscalls_per_req`` over the same
    divisor as the CPU, and ``syscalls_na`` - only when either edge has no count - the reason."""
    if start.syscalls is None or end.syscalls is None:
        reason = end.syscalls_na or start.syscalls_na or "not counted"
        return {"syscalls": None, "syscalls_per_req": None, "syscalls_na": reason}
    count = max(0, end.syscalls - start.syscalls)
    return {"syscalls": count, "syscalls_per_req": _per(count, per_request)}


@dataclass
class Sampler:
    """Samples a process (with all its descendants when tree=True) and the machine.

    Raises ConfigError for an invalid, nonexistent, foreign or kernel-thread pid.
    `cgroup`: "auto" (default) reads the tree's CPU from the cgroup loadbench made for `pid`
    when there is one (tree=True only), a path names a cgroup holding exactly the tree, None
    reads /proc only. `allocations`: "auto" (default) sums the allocation counter's pages when
    `pid` was started with it (tree=True only; see loadbench.core.allocations), a path names its
    directory, None counts none. `syscalls`: count the tree's system calls (where the kernel
    allows; see the module docstring), False counts none.
    """

    pid: int
    interval: float = 0.1
    tree: bool = True
    cgroup: Optional[str] = "auto"
    allocations: Optional[str] = "auto"
    syscalls: bool = True
    _core: Any = field(init=False, repr=False)
    # why the tracepoint id is unreadable where loadbench could not mount tracefs (core/tracefs.py)
    _tracefs_na: Optional[str] = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        try:
            pid = int(self.pid)
        except (TypeError, ValueError):
            raise ConfigError(
                f"invalid pid {self.pid!r}: a process id is a positive integer"
            ) from None
        if not self.interval > 0:
            raise ConfigError(
                f"invalid sampling interval {self.interval!r}: it must be positive (seconds)"
            )
        self.pid = pid
        cgroup = self.cgroup
        if cgroup == "auto":
            cgroup = cgroup_of(pid) if self.tree and pid > 0 else None
        self.cgroup = os.fspath(cgroup) if cgroup else None
        allocations = self.allocations
        if allocations == "auto":
            allocations = allocation_dir_of(pid) if self.tree and pid > 0 else None
        self.allocations = os.fspath(allocations) if allocations else None
        id_file = os.environ.get("LOADBENCH_SYSCALLS_TRACEPOINT_ID", "")
        if self.syscalls and not id_file:
            # tracefs unmounted (a VM booted without systemd's mount): mount it when root
            self._tracefs_na = ensure_sys_enter_id()
            id_file = sys_enter_id_path() or ""
        try:
            self._core = _core.Sampler(
                pid,
                bool(self.tree),
                self.cgroup or "",
                self.allocations or "",
                count_syscalls=bool(self.syscalls),
                syscall_id_file=id_file,
            )
        except ValueError as exc:
            raise ConfigError(f"cannot sample pid {pid}: {exc}") from None

    # -- exact readings --------------------------------------------------------------
    def allocation_totals(self) -> Optional[dict]:
        """The allocation counter's sums now (None: the tree is not counted or its pages are
        gone), without a whole snapshot."""
        if not self.allocations:
            return None
        try:
            return _core.allocation_totals(self.allocations)
        except ValueError:
            return None

    def snapshot(self, completed: Optional[Callable[[], int]] = None) -> ProcSnapshot:
        """Reads the process (tree), the machine and every process's CPU now, synchronously.
        `completed`: a generator's count of responses so far, read right before and after the
        tree (its CPU and allocations, ~0.1-3 ms) - not around every process's CPU, which can
        take 5-20 ms on a busy machine - so the snapshot carries the count at its instant."""
        before = completed() if completed is not None else None
        raw = self._core.snapshot()
        count = (before + completed()) / 2 if completed is not None else None
        snap = ProcSnapshot.from_core(raw, self.pid)
        if snap.syscalls_na and self._tracefs_na:
            snap = replace(snap, syscalls_na=f"{snap.syscalls_na}; {self._tracefs_na}")
        return replace(snap, processes=MachineProcesses.read(), completed=count)

    # -- background series ---------------------------------------------------------------
    def start(self) -> Sampler:
        if not self._core.running:
            self._core.start(float(self.interval))
        return self

    def stop(self) -> None:
        self._core.stop()

    @property
    def running(self) -> bool:
        return bool(self._core.running)

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def timeseries(self):  # -> pandas.DataFrame
        """One row per background sample. cpu_cores is the CPU used since the previous row
        divided by the time since it (1.0 = one core busy)."""
        import pandas as pd

        df = pd.DataFrame(self._core.series())
        if len(df):
            dt = df["t"].diff()
            df["cpu_cores"] = (df["cpu_s"].diff() / dt).fillna(0.0)
        else:
            df["cpu_cores"] = pd.Series(dtype=float)
        return df

    def exit_time(self) -> Optional[float]:
        """time.monotonic() when the sampled process was first seen gone, else None."""
        return self._core.exit_time()

    def sampling_cpu_s(self) -> float:
        """CPU time the background sampling thread itself used (its own overhead)."""
        return float(self._core.sampling_thread_cpu_s())

    def totals(self) -> dict[str, Any]:
        """Summary of the background series (first to last sample)."""
        df = self.timeseries()
        out: dict[str, Any] = {
            "pid": self.pid,
            "tree": self.tree,
            "interval_s": self.interval,
            "samples": len(df),
            "exited": self.exit_time() is not None,
            "exit_t": self.exit_time(),
            "sampler_cpu_s": self.sampling_cpu_s(),
            "proc_listings": int(self._core.proc_listings()),  # readings that re-listed /proc
        }
        if not len(df):
            return out
        first, last = df.iloc[0], df.iloc[-1]
        duration = float(last["t"] - first["t"])
        cpu_s = float(last["cpu_s"] - first["cpu_s"])
        machine_start = MachineSnapshot(
            **{name: float(first[f"machine_{name}"]) for name in _MACHINE_FIELDS},
            loadavg_1m=float(first["loadavg_1m"]),
        )
        machine_end = MachineSnapshot(
            **{name: float(last[f"machine_{name}"]) for name in _MACHINE_FIELDS},
            loadavg_1m=float(last["loadavg_1m"]),
        )
        out.update(
            {
                "duration_s": duration,
                "cpu_s": cpu_s,
                "cpu_cores_mean": cpu_s / duration if duration > 0 else None,
                "rss_kib_last": int(last["rss_kib"]),
                "rss_kib_max": int(df["rss_kib"].max()),
                "rss_peak_kib": int(df["rss_peak_kib"].max()),
                "fds_min": int(df["fds"].min()),
                "fds_max": int(df["fds"].max()),
                "threads_max": int(df["threads"].max()),
                "processes_max": int(df["processes"].max()),
                "ctx_switches": int(
                    (last["ctx_voluntary"] - first["ctx_voluntary"])
                    + (last["ctx_involuntary"] - first["ctx_involuntary"])
                ),
                "machine": machine_shares(machine_start, machine_end),
                "loadavg_1m_max": float(df["loadavg_1m"].max()),
            }
        )
        return out


class WindowEdges:
    """Takes a sampler's snapshots exactly at the edges of a run's measured window.

    The engine's clock is CLOCK_MONOTONIC, as is time.monotonic(): the window opens `warmup_s`
    after the engine started and, when the run is timed, closes `duration_s` later. A run loop
    blocks for at most `wait_s()` so that it wakes at the next edge, and calls `poll()` after
    each wake. Without warm-up the window opens when the engine starts, so `before_start()`
    takes that snapshot while the server is still idle; a run that ends early (count mode,
    Ctrl-C, error) takes its end snapshot in `block()`.

    A snapshot is taken when this thread runs, which on a busy machine is a scheduler slice or
    more after its edge (tens of ms beside a CPU burner: 2 % of a 1 s window). `completed`, when
    given to `started()`, counts every response the generator has had so far; it is read with
    each snapshot, so the per-request figures divide what the server spent between the two
    snapshots by the responses completed between them, not by the window's count.

    `on_open` / `on_close`, when set before `before_start()`, are called right after the
    window's start and end snapshots (a profiler switched on and off with the window).
    """

    def __init__(self, sampler: Sampler, warmup_s: float, duration_s: Optional[float]) -> None:
        self.sampler = sampler
        self.warmup_s = max(0.0, float(warmup_s or 0.0))
        self.duration_s = float(duration_s) if duration_s else None
        self.start: Optional[ProcSnapshot] = None
        self.end: Optional[ProcSnapshot] = None
        self.opens_at: Optional[float] = None
        self.closes_at: Optional[float] = None
        self.run_start_allocations: Optional[dict] = None
        self.completed: Optional[Callable[[], int]] = None
        self.on_open: Optional[Callable[[], None]] = None
        self.on_close: Optional[Callable[[], None]] = None

    def _opened(self) -> None:
        self.start = self.sampler.snapshot(self.completed)
        if self.on_open is not None:
            self.on_open()

    def _closed(self) -> None:
        self.end = self.sampler.snapshot(self.completed)
        if self.on_close is not None:
            self.on_close()

    def before_start(self) -> None:
        # The background series feeds the end snapshot's rss_max_kib (the window's sampled peak).
        self.sampler.start()
        # before any connection: a server that allocates per connection but not per request is
        # told apart from one whose heap the counter does not see
        self.run_start_allocations = self.sampler.allocation_totals()
        if self.warmup_s == 0.0:
            self._opened()

    def close(self) -> None:
        self.sampler.stop()

    def started(self, elapsed_s: float, completed: Optional[Callable[[], int]] = None) -> None:
        """The engine reports `elapsed_s` since its clock started; fix both edges from it.
        `completed`: the generator's count of every response so far (see the class)."""
        self.completed = completed
        engine_start = time.monotonic() - max(0.0, float(elapsed_s))
        self.opens_at = engine_start + self.warmup_s
        if self.duration_s is not None:
            self.closes_at = self.opens_at + self.duration_s

    def wait_s(self, default: float) -> float:
        """How long the run loop may block before the next edge is due."""
        now = time.monotonic()
        for edge, taken in ((self.opens_at, self.start), (self.closes_at, self.end)):
            if edge is not None and taken is None:
                return max(0.0, min(default, edge - now))
        return default

    def poll(self) -> None:
        now = time.monotonic()
        if self.start is None and self.opens_at is not None and now >= self.opens_at:
            self._opened()
        if self.end is None and self.closes_at is not None and now >= self.closes_at:
            self._closed()

    def span_responses(self) -> Optional[int]:
        """Responses completed between the two snapshots; None when not counted."""
        if self.start is None or self.end is None or self.end.completed is None:
            return None
        # without warm-up the start snapshot precedes the engine: nothing completed yet
        opened = self.start.completed if self.start.completed is not None else 0.0
        return max(0, round(self.end.completed - opened))

    def block(
        self, responses: int, also_ours: Iterable[int] = (), connections: int = 0
    ) -> Optional[dict[str, Any]]:
        """The `server` block; None when the run ended before its window opened. ``also_ours``:
        pids of the run besides this process and the sampled tree; ``connections``: the run's
        (see :func:`window`)."""
        if self.start is None:
            self.close()
            return None
        if self.end is None:
            self._closed()
        self.close()
        return window(
            self.start,
            self.end,
            responses,
            also_ours,
            self.run_start_allocations,
            connections,
            span_responses=self.span_responses(),
        )
