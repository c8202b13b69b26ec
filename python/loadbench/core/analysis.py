"""The arithmetic of a sweep: small pure functions over plain numbers.

Nothing here reads files or runs load; every function is unit-tested on hand-computed data
(tests/test_analysis.py). The report, the charts and the notebook all call these, so a number
means the same thing wherever it appears.

Definitions used throughout:

- **In-flight (Little's law)**: L = lambda x W = req/s x mean latency (s). For a closed loop
  with C connections and no think time, L should be close to C.
- **Under-driven (‡)**: a closed-loop cell that did not hold its C requests in flight.
  loadbench's closed-loop latency runs from the moment the previous response completed, so a
  connection that keeps cycling requests contributes exactly 1 to L, and L ~ C by
  construction: it only drops when connections spend window time *outside* a measured
  request - failing to connect, reconnecting after the server closed them, or erroring. The
  flag fires when L < ``UNDERDRIVEN_FRACTION`` (0.9) x C *and* the generator recorded such a
  cause (errors or reconnects), and names the cause: the column's C was not the concurrency
  the server saw. (The old rule, L < 0.5 C "queued outside the server", could not fire on
  loadbench's data; a healthy cell sits at 0.97-1.0 C.)
- **Outside CPU / contended (⚑)**: the CPU that processes other than the run's used in the
  window - every user-space process on the machine but the server tree and the measuring
  process (its generator, sampler and Python threads), read per process at the window's edges
  (``server.others_cpu_s``; kernel threads apart, ``kernel_threads_cpu_s``) - plus the
  hypervisor's steal in the window (``server.steal_s``: CPU other guests took while ours wanted
  to run), as a share of all the machine's CPU time. Above ``CONTENDED_SHARE`` (5 %) other processes competed for the CPUs
  during the window. Results from before that reading were judged on /proc/stat's busy share
  (:func:`outside_cpu_share`), whose tick sampling and short column sum read 5-8 % on quiet
  windows (bench/contention_accounting.py).
- **Clean**: at most ``DIRTY_SHARE`` (1 %) of outcomes were non-2xx answers or errors.
- **Server CPU us/req**: server CPU seconds (utime+stime, all threads) in the measured window
  / exact responses in the window - never rps x duration.
- **Who limited a cell (§ generator-bound, ¶ pool-bound)**: :func:`loadbench.core.limits.limited_by`,
  from both sides' CPU: a cell whose server kept >= 90 % of its cores busy is the server's
  figure whatever the generator did; one where the generator's threads were saturated (or,
  open loop, late) is a lower bound ("≥") closed from above by the server's CPU ceiling (cores /
  CPU per response): the value lies in [measured, ceiling]. Connection-setup cells keep their own
  rule (:func:`is_setup_generator_bound`). A bound's mean latency is, by Little's law (C = req/s
  x mean latency), at most what was measured; its percentiles prove nothing and are never ranked.
- **Certain orders and noise** (:mod:`loadbench.core.figures`): X is certainly above Y when X's
  lower end exceeds Y's upper end (its ceiling, or its exact value), and beyond noise when the
  repeats' ranges do not overlap either; otherwise the pair is "open" (bounds) or "within noise
  (±N %)". A rank is a range over the servers it is not certainly ordered against
  (:func:`certain_ranks`).
- **Not steady (↗)**: a cell whose repeats, in the order they ran, only climbed - each above the
  one before - and ended at least ``NOT_STEADY_CLIMB`` (1.5) x where they began: a JIT or a cache
  still warming, not a steady figure (:func:`not_steady`). The sweeps' repeats spread over ~12 %
  of their median, so a 50 % climb in one direction is far outside that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from . import replication

# What a figure proves and the orders it supports live in figures.py; they are part of this
# module's vocabulary (loadbench.analysis.Figure, certain_ranks), so they are re-exported here.
from .figures import (  # noqa: F401
    Figure,
    Rank,
    bound_of,
    certain_ranks,
    certainly_better,
    clearly_better,
    compare,
    figure_max,
    figure_mean,
    figure_min,
    figure_ratio,
    interval,
    noise_range,
    noise_share,
    open_ended,
    ordinal,
    pair_noise,
    ranks_by,
)

# A closed-loop cell is under-driven when in-flight < UNDERDRIVEN_FRACTION x connections and the
# generator lost slot time to errors or reconnects.
UNDERDRIVEN_FRACTION = 0.9
STARVED_FRACTION = UNDERDRIVEN_FRACTION  # the old name (notebooks, older scripts)
# More than this share of non-2xx answers + errors marks a cell (never bold, never ranked).
DIRTY_SHARE = 0.01
# Outside CPU above this share of the whole machine marks a window as contended.
CONTENDED_SHARE = 0.05
# Repeats that only climbed, the last at least this multiple of the first: not steady (↗).
NOT_STEADY_CLIMB = 1.5


@dataclass(frozen=True)
class Spread:
    """Median of repeats with the min/max around it; ``n`` counts the repeats used.
    ``samples``: (block, value) of each repeat that ran in a sweep block (sweep/runner.py), for
    comparisons paired within blocks; empty for repeats that ran back to back."""

    median: float
    min: float
    max: float
    n: int
    samples: tuple = ()

    @property
    def values(self) -> list[float]:
        return [v for _, v in self.samples]

    @property
    def confidence(self) -> Optional[tuple[float, float]]:
        """The figure's interval from the spread between replications (core/replication.py:
        a 95 % t interval of the mean, holding the median); the min-max for repeats without
        their values; None for one repeat."""
        if self.n < 2:
            return None
        if len(self.samples) == self.n:
            return replication.figure_interval(self.values, self.median)
        return (self.min, self.max)

    @property
    def blocks(self) -> dict:
        """{block: value} of the repeats that ran in blocks (for paired comparisons)."""
        return {b: v for b, v in self.samples if b is not None}

    @property
    def relative_range(self) -> float:
        """(max - min) / median: 0.05 means the repeats spread over 5 % of the median."""
        if self.median == 0:
            return 0.0 if self.max == self.min else math.inf
        return (self.max - self.min) / abs(self.median)


def _usable(values: Sequence[Optional[float]]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def cumulative_shares(counts: Sequence[int]) -> list[float]:
    """The empirical CDF of per-bucket counts: the share of the total at or below each bucket."""
    total = float(sum(counts))
    out, running = [], 0
    for n in counts:
        running += n
        out.append(running / total)
    return out


def median(values: Sequence[Optional[float]]) -> Optional[float]:
    """THE median of loadbench (report, charts, sweep capacity, notebook, bench): the middle
    value of an odd count, the mean of the two middle values of an even count; None and NaN
    are skipped; None when nothing is left."""
    usable = sorted(_usable(values))
    if not usable:
        return None
    mid = len(usable) // 2
    return usable[mid] if len(usable) % 2 else (usable[mid - 1] + usable[mid]) / 2


def median_spread(
    values: Sequence[Optional[float]], blocks: Optional[Sequence[object]] = None
) -> Optional[Spread]:
    """Median with min/max over the repeats that produced a number (None and NaN are skipped).
    ``blocks``: each value's sweep block (None where a repeat ran outside blocks), kept as the
    Spread's samples so its interval and paired comparisons read the replications."""
    usable = _usable(values)
    if not usable:
        return None
    samples: tuple = ()
    if blocks is not None:
        samples = tuple(
            (b, float(v))
            for b, v in zip(blocks, values)
            if v is not None and not math.isnan(float(v))
        )
    else:
        samples = tuple((None, v) for v in usable)
    return Spread(median(usable), min(usable), max(usable), len(usable), samples)


def not_steady(
    values_in_run_order: Sequence[Optional[float]], climb: float = NOT_STEADY_CLIMB
) -> bool:
    """Whether repeats (in the order they ran) only climbed - each above the one before, at least
    three of them - and the last is at least ``climb`` x the first: the server was still warming
    up (a JIT, a cache), so their median is no steady figure."""
    usable = _usable(values_in_run_order)
    if len(usable) < 3 or usable[0] <= 0:
        return False
    rising = all(b > a for a, b in zip(usable, usable[1:]))
    return rising and usable[-1] >= climb * usable[0]


def littles_law_inflight(rps: float, mean_latency_us: float) -> float:
    """Average requests in flight: L = throughput (req/s) x mean latency (s)."""
    if rps < 0 or mean_latency_us < 0:
        raise ValueError("rps and latency must be non-negative")
    return rps * mean_latency_us / 1e6


def is_starved(inflight: float, connections: int, fraction: float = UNDERDRIVEN_FRACTION) -> bool:
    """True when fewer than ``fraction`` x ``connections`` requests were in flight on average."""
    if connections <= 0:
        raise ValueError("connections must be positive")
    return inflight < fraction * connections


def underdriven_cause(
    inflight: Optional[float],
    connections: Optional[int],
    errors: int,
    reconnects: int,
    fraction: float = UNDERDRIVEN_FRACTION,
) -> Optional[str]:
    """Why a closed loop held fewer than ``fraction`` x C requests in flight, or None when it
    held them (or lost slots without a cause the generator saw, e.g. an unfair server)."""
    if inflight is None or not connections or not is_starved(inflight, connections, fraction):
        return None
    causes = []
    if errors:
        causes.append(f"{errors} errors")
    if reconnects:
        causes.append(f"{reconnects} reconnects")
    if not causes:
        return None
    return f"in flight {inflight:.1f} of {connections} ({', '.join(causes)})"


def bad_share(non2xx: int, errors: int, responses: int) -> Optional[float]:
    """Share of outcomes (responses + errors) that were non-2xx answers or errors."""
    outcomes = responses + errors
    return None if outcomes <= 0 else (non2xx + errors) / outcomes


def non_2xx(status_codes: Mapping[str, int]) -> int:
    """Responses whose status is not 2xx (keys are status codes as strings or ints)."""
    return sum(int(n) for code, n in status_codes.items() if not str(code).startswith("2"))


def outside_cpu_share(
    busy_share: Optional[float],
    window_s: Optional[float],
    cores: Optional[int],
    server_cpu_s: Optional[float],
    generator_cpu_s: Optional[float],
    irq_share: Optional[float] = None,
) -> Optional[float]:
    """The old rule, for results without ``others_cpu_s``: CPU used by everything but the server
    tree and the generator in a window, as a share of the whole machine (0.05 = 5 % of all
    cores), from the machine's busy time. None when a term is unknown.

    ``irq_share``: the machine's irq + softirq share over the run that no task was charged for
    (:func:`loadbench.gate.irq_share`). On loopback most of it is the benchmark's own packets,
    so it is not "outside"; where the kernel charges softirq time to the interrupted task
    (no CONFIG_IRQ_TIME_ACCOUNTING) it is already in the server's or generator's CPU, and 0."""
    if busy_share is None or not window_s or window_s <= 0 or not cores:
        return None
    ours = ((server_cpu_s or 0.0) + (generator_cpu_s or 0.0)) / (window_s * cores)
    return max(0.0, busy_share - (irq_share or 0.0) - ours)


def outside_share(
    server: Mapping,
    cores: Optional[int],
    generator_cpu_s: Optional[float] = None,
    irq_share: Optional[float] = None,
    duration_s: Optional[float] = None,
) -> Optional[float]:
    """THE outside-CPU share of a window, from a run's ``server`` block: other processes' CPU
    (``others_cpu_s``) and the hypervisor's steal (``steal_s``) over the window's CPU time
    (window x ``cores``). A block from before that reading existed is judged by
    :func:`outside_cpu_share` (busy time minus ours)."""
    window_s = server.get("window_s") or duration_s
    if not window_s or window_s <= 0 or not cores:
        return None
    if server.get("others_cpu_s") is not None:
        taken = float(server["others_cpu_s"]) + float(server.get("steal_s") or 0.0)
        return max(0.0, taken) / (window_s * cores)
    machine = server.get("machine") if isinstance(server.get("machine"), Mapping) else {}
    return outside_cpu_share(
        machine.get("busy_share"), window_s, cores, server.get("cpu_s"), generator_cpu_s, irq_share
    )


def cpu_us_per_request(cpu_seconds: float, responses: int) -> Optional[float]:
    """Server CPU microseconds per response; None when there were no responses."""
    if responses <= 0:
        return None
    return cpu_seconds * 1e6 / responses


def connection_rate(connections_opened: int, duration_s: float) -> Optional[float]:
    """New connections (http) or full TLS handshakes (https) per second of measured window."""
    if duration_s <= 0:
        return None
    return connections_opened / duration_s


def best_of(
    values: Mapping[str, Optional[float]],
    *,
    higher_is_better: bool,
    excluded: Sequence[str] = (),
) -> Optional[str]:
    """The key with the best value, ignoring missing values and ``excluded`` keys.

    Ties go to the first key in mapping order, so a table's bold mark is reproducible.
    Returns None when no key qualifies (every cell failed, starved or was excluded).
    """
    best_key: Optional[str] = None
    best_value = 0.0
    for key, value in values.items():
        if key in excluded or value is None or math.isnan(value):
            continue
        better = best_key is None or (
            value > best_value if higher_is_better else value < best_value
        )
        if better:
            best_key, best_value = key, value
    return best_key


def ratio_to_baseline(
    values: Mapping[str, Optional[float]], baseline: str
) -> dict[str, Optional[float]]:
    """Each value divided by the baseline's (1.0 for the baseline itself; None when undefined)."""
    base = values.get(baseline)
    out: dict[str, Optional[float]] = {}
    for key, value in values.items():
        if value is None or base is None or base == 0 or math.isnan(value) or math.isnan(base):
            out[key] = None
        else:
            out[key] = value / base
    return out


def is_generator_bound(result: Mapping) -> bool:
    """True when the Result dict says the generator saturated its own CPUs in the window."""
    generator = result.get("generator") or {}
    return bool(generator.get("saturated", False))


def cpu_us_per_connection(
    cpu_seconds: Optional[float], connections: Optional[int]
) -> Optional[float]:
    """CPU microseconds per new connection (http) or full TLS handshake (https); None when
    either figure is missing or no connection was opened."""
    if cpu_seconds is None or not connections:
        return None
    return cpu_seconds * 1e6 / connections


def is_setup_generator_bound(
    generator_us_per_conn: Optional[float], server_us_per_conn: Optional[float]
) -> bool:
    """A connection-setup cell measures the generator when the generator spent more CPU per new
    connection (or handshake) than the server did: with one core each, the generator runs out
    first, so the cell's rate is the generator's limit, not the server's. False when either
    figure is missing (nothing to compare)."""
    if generator_us_per_conn is None or server_us_per_conn is None:
        return False
    return generator_us_per_conn > server_us_per_conn


def arithmetic_mean(values: Sequence[Optional[float]]) -> Optional[float]:
    """Mean of the defined values (the 'average throughput across scenarios' of the charts)."""
    usable = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return sum(usable) / len(usable) if usable else None
