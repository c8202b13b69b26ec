"""The load gate: wait until the machine is quiet before measuring.

A benchmark on a shared machine measures the other jobs as much as the server (seed report
001 waited until the load average "dropped below 0.4"). Before a sweep, before each cell of
it, and (opt-in) before ``loadbench run``, the gate polls until

- the 1-minute load average is below ``quiet_load`` (default: 0.25 x logical cores, e.g. 0.5 on
  2 cores - one busy core on a 2-core machine is a load of ~1), **or**
- the CPU used by other processes over the last second is below ``quiet_outside`` (default 5 %
  of the machine, summed per process as a window's outside CPU is: loadbench.sampler.others_cpu;
  the load average lags a finished build by minutes, this does not),

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
from typing import Callable, Iterable, Optional

from .sampler import MachineProcesses, others_cpu

DEFAULT_LOAD_PER_CORE = 0.25
DEFAULT_QUIET_OUTSIDE = 0.05
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_CELL_TIMEOUT_S = 20.0


def cpu_snapshot() -> MachineProcesses:
    """Every process's CPU now: one end of an outside-CPU measurement (:func:`outside_share_between`)."""
    return MachineProcesses.read()


def outside_share_between(
    before: MachineProcesses, after: MachineProcesses, ours: Iterable[int] = ()
) -> Optional[float]:
    """Share of the machine's CPU that processes other than this one and ``ours`` (e.g. a server
    tree we started and measure ourselves), and the hypervisor's steal, took between two
    :func:`cpu_snapshot` readings: the sampler's rule for a window's outside CPU
    (loadbench.sampler.others_cpu)."""
    elapsed = after.t - before.t
    cores = os.cpu_count() or 1
    if elapsed <= 0:
        return None
    return others_cpu(before, after, ours).competing_s / (elapsed * cores)


def outside_share_now(
    interval_s: float = 1.0, sleep: Callable[[float], None] = time.sleep
) -> Optional[float]:
    """Share of the machine's CPU that processes other than this one used over ``interval_s``."""
    try:
        before = cpu_snapshot()
        sleep(interval_s)
        after = cpu_snapshot()
    except (OSError, ValueError, RuntimeError):
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
        outside = (
            f", outside CPU {100 * self.outside_share:.0f} %"
            if self.outside_share is not None
            else ""
        )
        if self.timed_out:
            return (
                f"machine still busy after {self.timeout_s:g} s ({load}{outside}); measuring anyway - "
                "the report says so"
            )
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

    def _result(
        self,
        quiet: bool,
        waited: float,
        load: Optional[float],
        outside: Optional[float],
        timeout_s: float,
        timed_out: bool = False,
        skipped: bool = False,
    ) -> GateResult:
        return GateResult(
            quiet,
            waited,
            load,
            outside,
            timed_out,
            skipped,
            self.load_threshold,
            self.quiet_outside,
            timeout_s,
        )

    def is_quiet(self, load: Optional[float], outside: Optional[float]) -> bool:
        return (load is not None and load < self.load_threshold) or (
            outside is not None and outside < self.quiet_outside
        )

    def vouch(
        self, outside_share: Optional[float], timeout_s: Optional[float] = None
    ) -> Optional[GateResult]:
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
            outside = (
                None
                if load is not None and load < self.load_threshold
                else _safe(self.read_outside)
            )
            waited = self.clock() - start
            if self.is_quiet(load, outside):
                return self._result(True, waited, load, outside, timeout)
            if waited >= timeout:
                return self._result(False, waited, load, outside, timeout, timed_out=True)
            if not told and self.on_wait is not None:
                told = True
                self.on_wait(
                    f"waiting for a quiet machine (load {'?' if load is None else f'{load:.2f}'}, "
                    f"quiet below {self.load_threshold:g}; up to {timeout:g} s)"
                )
            self.sleep(min(self.poll_s, max(0.0, timeout - waited)))


def _safe(read: Callable[[], Optional[float]]) -> Optional[float]:
    try:
        return read()
    except (OSError, ValueError):
        return None
