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
- **Generator-bound (§)**: the generator's own threads were busy nearly all the window
  (``generator.saturated``), or (connection setup) it spent more CPU per new connection than
  the server. The cell's req/s is the generator's ceiling, so the server's own figure is *at
  least* that: a lower bound (``Figure`` with ``bound="lower"``, shown "≥ N"). Its mean latency
  is, by Little's law (C = req/s x mean latency in a closed loop), at most what was measured:
  an upper bound ("≤"). Its percentiles prove nothing and are never ranked.
- **Certain ranks**: with bounds in play an order is only claimed where it is certain: X is
  certainly better than Y when X's figure is better than Y's and Y's figure is exact (not
  open towards better values). Everything else between two servers is *uncertain*, and a rank
  becomes a range (:func:`certain_ranks`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

# A closed-loop cell is under-driven when in-flight < UNDERDRIVEN_FRACTION x connections and the
# generator lost slot time to errors or reconnects.
UNDERDRIVEN_FRACTION = 0.9
STARVED_FRACTION = UNDERDRIVEN_FRACTION  # the old name (notebooks, older scripts)
# More than this share of non-2xx answers + errors marks a cell (never bold, never ranked).
DIRTY_SHARE = 0.01
# Outside CPU above this share of the whole machine marks a window as contended.
CONTENDED_SHARE = 0.05


class Figure(float):
    """A report number and what it proves about the server: a float (arithmetic, formatting
    and comparisons work as on the value) carrying its bound.

    ``bound``: None - measured; "lower" - the true value is at least this (a generator-bound
    cell entered it: "≥"); "upper" - at most this ("≤", e.g. the mean latency of such a cell,
    or a ratio over a lower bound); "unknown" - a ratio of two bounds in the same direction,
    which bounds nothing. ``bounded`` of ``cells``: how many of the cells behind the figure
    are bounds (an average names them)."""

    bound: Optional[str]
    bounded: int
    cells: int

    def __new__(
        cls, value: float, bound: Optional[str] = None, bounded: int = 0, cells: int = 1
    ) -> "Figure":
        if bound not in (None, "lower", "upper", "unknown"):
            raise ValueError(f"bound must be None, 'lower', 'upper' or 'unknown', not {bound!r}")
        obj = super().__new__(cls, value)
        obj.bound, obj.bounded, obj.cells = bound, bounded, cells
        return obj

    def __reduce__(self):
        return (Figure, (float(self), self.bound, self.bounded, self.cells))

    def __repr__(self) -> str:
        return (
            f"Figure({float(self)!r}, bound={self.bound!r})"
            if self.bound
            else f"Figure({float(self)!r})"
        )

    @property
    def prefix(self) -> str:
        """What a table or chart writes before the number: "≥ ", "≤ ", "? " or nothing."""
        return {"lower": "≥ ", "upper": "≤ ", "unknown": "? "}.get(self.bound or "", "")


def bound_of(value: object) -> Optional[str]:
    """The bound of a number (None for a plain float or a measured Figure)."""
    return getattr(value, "bound", None)


def open_ended(value: object, higher_is_better: bool) -> bool:
    """Whether the true value may be *better* than the figure: a lower bound of a
    higher-is-better metric (req/s), an upper bound of a lower-is-better one (latency), or a
    figure whose bound is unknown."""
    bound = bound_of(value)
    return bound == "unknown" or bound == ("lower" if higher_is_better else "upper")


_FLIP = {"lower": "upper", "upper": "lower"}


def figure_ratio(top: Optional[float], bottom: Optional[float]) -> Optional[Figure]:
    """top / bottom with the bound that follows from theirs: a lower bound over a measured
    value (or over an upper bound) is a lower bound, a measured value over a lower bound an
    upper bound; two bounds in the same direction give "unknown". None when undefined."""
    if top is None or not bottom or math.isnan(top) or math.isnan(bottom):
        return None
    a, b = bound_of(top), bound_of(bottom)
    if "unknown" in (a, b) or (a is not None and a == b):
        bound: Optional[str] = "unknown"
    else:
        bound = a or (_FLIP[b] if b else None)
    return Figure(float(top) / float(bottom), bound)


@dataclass(frozen=True)
class Rank:
    """A server's place by one metric, as far as the figures make it certain: ``best`` and
    ``worst`` possible places (equal when the place is certain; tied measured figures share a
    place) and the servers the order against which is ``uncertain``."""

    best: int
    worst: int
    uncertain: tuple = ()
    open_ended: bool = False  # the server's own figure is a bound that may hide a better value

    @property
    def certain(self) -> bool:
        return self.best == self.worst

    def text(self) -> str:
        """'3', 'at least 2nd (uncertain against h2o)', '1st-2nd (uncertain against beast)'."""
        if self.certain:
            return str(self.best)
        against = f" (uncertain against {', '.join(self.uncertain)})"
        if self.open_ended and self.best == 1:
            return f"at least {ordinal(self.worst)}{against}"
        return f"{ordinal(self.best)}-{ordinal(self.worst)}{against}"


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def certainly_better(x: float, y: float, higher_is_better: bool) -> bool:
    """X's true value is better than Y's for sure: X's figure is better and Y's is not open
    towards better values (X's own bound only makes X better still)."""
    better = x > y if higher_is_better else x < y
    return better and not open_ended(y, higher_is_better)


def certain_ranks(
    values: Mapping[str, Optional[float]], *, higher_is_better: bool
) -> dict[str, Rank]:
    """The :class:`Rank` of every key with a value (bounds read from :class:`Figure` values):
    best = 1 + the keys certainly better, worst = best + the keys whose order against it is
    uncertain. Keys without a value are left out."""
    have = {k: v for k, v in values.items() if v is not None and not math.isnan(float(v))}
    out = {}
    for k, v in have.items():
        above, unsure = 0, []
        for other, w in have.items():
            if other == k:
                continue
            if certainly_better(w, v, higher_is_better):
                above += 1
            elif certainly_better(v, w, higher_is_better):
                continue
            elif (
                float(w) == float(v)
                and not open_ended(v, higher_is_better)
                and not open_ended(w, higher_is_better)
            ):
                continue  # measured and equal: a shared place
            else:
                unsure.append(other)
        out[k] = Rank(
            1 + above, 1 + above + len(unsure), tuple(unsure), open_ended(v, higher_is_better)
        )
    return out


@dataclass(frozen=True)
class Spread:
    """Median of repeats with the min/max around it; ``n`` counts the repeats used."""

    median: float
    min: float
    max: float
    n: int

    @property
    def relative_range(self) -> float:
        """(max - min) / median: 0.05 means the repeats spread over 5 % of the median."""
        if self.median == 0:
            return 0.0 if self.max == self.min else math.inf
        return (self.max - self.min) / abs(self.median)


def _usable(values: Sequence[Optional[float]]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def median(values: Sequence[Optional[float]]) -> Optional[float]:
    """THE median of loadbench (report, charts, sweep capacity, notebook, bench): the middle
    value of an odd count, the mean of the two middle values of an even count; None and NaN
    are skipped; None when nothing is left."""
    usable = sorted(_usable(values))
    if not usable:
        return None
    mid = len(usable) // 2
    return usable[mid] if len(usable) % 2 else (usable[mid - 1] + usable[mid]) / 2


def median_spread(values: Sequence[Optional[float]]) -> Optional[Spread]:
    """Median with min/max over the repeats that produced a number (None and NaN are skipped)."""
    usable = _usable(values)
    if not usable:
        return None
    return Spread(median(usable), min(usable), max(usable), len(usable))


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
