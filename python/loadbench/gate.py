"""The load gate: wait until the machine is quiet before measuring.

A benchmark on a shared machine measures the other jobs as much as the server (seed report
001 waited until the load average "dropped below 0.4"). Before a sweep, before each cell of
it, and (opt-in) before ``loadbench run``, the gate polls until

- the 1-minute load average is below ``quiet_load`` (default: 0.25 x logical cores, e.g. 0.5 on
  2 cores - one busy core on a 2-core machine is a load of ~1), **or**
- the CPU used by other processes over the last second is below ``quiet_outside`` (default 5 %
  of the machine; the load average lags a finished build by minutes, this does not),

or until ``timeout_s`` passes (120 s before a sweep or run, ``cell_timeout_s`` = 20 s before
each cell): then it proceeds and says so (``GateResult.timed_out``), and the report's
environment block shows it. ``--no-wait`` skips it (``GateResult.skipped``).

    g = LoadGate(timeout_s=60).wait()     # GateResult(quiet=True, waited_s=3.1, ...)

The readers are injectable (tests drive the gate without a busy machine or a long wait).
"""
from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

DEFAULT_LOAD_PER_CORE = 0.25
DEFAULT_QUIET_OUTSIDE = 0.05
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_CELL_TIMEOUT_S = 20.0


def _proc_stat() -> tuple[float, float]:
    """(busy, total) CPU jiffies of the whole machine from /proc/stat's first line."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [float(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    steal = fields[7] if len(fields) > 7 else 0.0
    total = sum(fields[:8])
    return total - idle - steal, total


def cpu_times() -> Optional[list[float]]:
    """The machine's CPU jiffies from /proc/stat (user nice system idle iowait irq softirq steal)."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            return [float(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None


def irq_time_is_separate() -> bool:
    """Whether this kernel keeps irq/softirq time out of the tasks' own CPU time
    (CONFIG_IRQ_TIME_ACCOUNTING). Without it, a softirq tick is charged both to /proc/stat's
    softirq column and to the task it interrupted (the server or the generator, on loopback),
    so subtracting it again would hide another process's CPU. Unknown config: not separate."""
    import gzip

    sources = [("/proc/config.gz", True), (f"/boot/config-{os.uname().release}", False)]
    for path, zipped in sources:
        try:
            opener = gzip.open if zipped else open
            with opener(path, "rt") as fh:  # type: ignore[operator]
                return any(line.strip() == "CONFIG_IRQ_TIME_ACCOUNTING=y" for line in fh)
        except OSError:
            continue
    return False


def irq_share(before: Optional[list[float]], after: Optional[list[float]]) -> Optional[float]:
    """Share of all CPU time spent in irq + softirq between two :func:`cpu_times` readings that
    no task was charged for: all of it where the kernel accounts irq time separately, none
    where it charges it to the interrupted task (see :func:`irq_time_is_separate`)."""
    if not before or not after or len(before) < 7 or len(after) < 7:
        return None
    delta = [b - a for a, b in zip(before, after)]
    total = sum(delta)
    if total <= 0:
        return None
    return (delta[5] + delta[6]) / total if _IRQ_TIME_SEPARATE else 0.0


_IRQ_TIME_SEPARATE = irq_time_is_separate()


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def cpu_snapshot() -> tuple[float, float, float]:
    """(machine busy jiffies, machine total jiffies, this process's CPU seconds incl. reaped
    children): the two ends of an outside-CPU measurement (:func:`outside_share_between`)."""
    busy, total = _proc_stat()
    return busy, total, _own_cpu_s()


def outside_share_between(before: tuple[float, float, float], after: tuple[float, float, float],
                          also_ours_s: float = 0.0) -> Optional[float]:
    """Share of the machine's CPU that other processes used between two :func:`cpu_snapshot`
    readings: busy time minus this process's and ``also_ours_s`` more seconds (e.g. a server
    we started and measured ourselves)."""
    total = after[1] - before[1]
    if total <= 0:
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    own = (after[2] - before[2] + also_ours_s) * tick
    return max(0.0, (after[0] - before[0] - own) / total)


def outside_share_now(interval_s: float = 1.0, sleep: Callable[[float], None] = time.sleep) -> Optional[float]:
    """Share of the machine's CPU that processes other than this one used over ``interval_s``."""
    try:
        before = cpu_snapshot()
        sleep(interval_s)
        after = cpu_snapshot()
    except (OSError, ValueError, IndexError):
        return None
    return outside_share_between(before, after)


def load_1m() -> float:
    return os.getloadavg()[0]


@dataclass
class GateResult:
    """What the gate saw when it let the measurement go (stored with each cell)."""

    quiet: bool
    waited_s: float
    load1: Optional[float]
    outside_share: Optional[float]
    timed_out: bool = False
    skipped: bool = False
    quiet_load: float = 0.0
    quiet_outside: float = DEFAULT_QUIET_OUTSIDE
    timeout_s: float = DEFAULT_TIMEOUT_S
    # "probe": the gate read the load / sampled the outside CPU itself; "previous window": the
    # window measured just before showed a quiet machine, so no probe was taken (LoadGate.vouch)
    source: str = "probe"

    def to_dict(self) -> dict:
        out = asdict(self)
        out["waited_s"] = round(self.waited_s, 2)
        return out

    def describe(self) -> str:
        if self.skipped:
            return "load gate skipped (--no-wait)"
        load = f"load {self.load1:.2f}" if self.load1 is not None else "load ?"
        outside = f", outside CPU {100 * self.outside_share:.0f} %" if self.outside_share is not None else ""
        if self.timed_out:
            return (f"machine still busy after {self.timeout_s:g} s ({load}{outside}); measuring anyway - "
                    "the report says so")
        return f"machine quiet after {self.waited_s:.0f} s ({load}{outside})"


@dataclass
class LoadGate:
    """Waits for a quiet machine; see the module docstring for the rule and the defaults."""

    quiet_load: Optional[float] = None  # None: DEFAULT_LOAD_PER_CORE x logical cores
    quiet_outside: float = DEFAULT_QUIET_OUTSIDE
    timeout_s: float = DEFAULT_TIMEOUT_S
    # before each cell of a sweep: a shorter wait (a busy machine would otherwise add
    # timeout_s to every cell); a cell measured on a busy machine is re-run or marked anyway
    cell_timeout_s: float = DEFAULT_CELL_TIMEOUT_S
    poll_s: float = 1.0
    enabled: bool = True
    read_load: Callable[[], Optional[float]] = load_1m
    read_outside: Callable[[], Optional[float]] = field(default=outside_share_now)
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    on_wait: Optional[Callable[[str], None]] = None  # called once when the gate starts waiting

    @property
    def load_threshold(self) -> float:
        if self.quiet_load is not None:
            return self.quiet_load
        return DEFAULT_LOAD_PER_CORE * (os.cpu_count() or 1)

    def _result(self, quiet: bool, waited: float, load: Optional[float], outside: Optional[float],
                timeout_s: float, timed_out: bool = False, skipped: bool = False) -> GateResult:
        return GateResult(quiet, waited, load, outside, timed_out, skipped, self.load_threshold,
                          self.quiet_outside, timeout_s)

    def is_quiet(self, load: Optional[float], outside: Optional[float]) -> bool:
        return ((load is not None and load < self.load_threshold)
                or (outside is not None and outside < self.quiet_outside))

    def vouch(self, outside_share: Optional[float], timeout_s: Optional[float] = None) -> Optional[GateResult]:
        """A quiet result without probing, when ``outside_share`` - other processes' share of the
        machine's CPU over a measured window that just ended (the sweep's per-window figure) - is
        below the gate's outside threshold; else None (probe with :meth:`wait`). That window is a
        longer and fresher sample of the very quantity the probe would take. Without this, every
        cell of a sweep idled a second in the probe: the sweep's own load keeps the 1-min load
        average above the threshold, so each wait fell through to the 1 s outside-CPU sample
        (320 s of the 13.3-min default sweep of 2026-11-30)."""
        if not self.enabled or outside_share is None or outside_share >= self.quiet_outside:
            return None
        timeout = self.timeout_s if timeout_s is None else timeout_s
        result = self._result(True, 0.0, _safe(self.read_load), outside_share, timeout)
        result.source = "previous window"
        return result

    def wait(self, timeout_s: Optional[float] = None) -> GateResult:
        """Block until the machine is quiet or ``timeout_s`` (default: the gate's) passed;
        never raises on a busy machine."""
        timeout = self.timeout_s if timeout_s is None else timeout_s
        if not self.enabled:
            return self._result(False, 0.0, _safe(self.read_load), None, timeout, skipped=True)
        start = self.clock()
        told = False
        while True:
            load = _safe(self.read_load)
            outside = None if load is not None and load < self.load_threshold else _safe(self.read_outside)
            waited = self.clock() - start
            if self.is_quiet(load, outside):
                return self._result(True, waited, load, outside, timeout)
            if waited >= timeout:
                return self._result(False, waited, load, outside, timeout, timed_out=True)
            if not told and self.on_wait is not None:
                told = True
                self.on_wait(f"waiting for a quiet machine (load {'?' if load is None else f'{load:.2f}'}, "
                             f"quiet below {self.load_threshold:g}; up to {timeout:g} s)")
            self.sleep(min(self.poll_s, max(0.0, timeout - waited)))


def _safe(read: Callable[[], Optional[float]]) -> Optional[float]:
    try:
        return read()
    except (OSError, ValueError):
        return None
