"""The arithmetic of a sweep: small pure functions over plain numbers.

Nothing here reads files or runs load; every function is unit-tested on hand-computed data
(tests/test_analysis.py). The report, the charts and the notebook all call these, so a number
means the same thing wherever it appears.

Definitions used throughout:

- **In-flight (Little's law)**: L = lambda x W = req/s x mean latency (s). For a closed loop
  with C connections and no think time, L should be close to C.
- **Starved (‡)**: a closed-loop cell whose in-flight count is below ``STARVED_FRACTION`` (0.5)
  of its connections. Half the connections were not actually waiting on the server: they
  queued in the generator or the kernel's accept backlog, so the latency percentiles describe
  only the few requests truly in flight and are not a service-level number. Its req/s is still
  the server's saturation throughput. 0.5 is deliberately lenient: a healthy closed loop sits
  at 0.9-1.0; anything under half is a different experiment from the one the column claims.
- **Server CPU us/req**: server CPU seconds (utime+stime, all threads) in the measured window
  / exact responses in the window - never rps x duration.
- **Generator-bound**: the generator's own threads were busy nearly all the window
  (``generator.saturated``); the cell measures loadbench, not the server.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

# A closed-loop cell is starved when in-flight < STARVED_FRACTION x connections.
STARVED_FRACTION = 0.5


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


def median_spread(values: Sequence[Optional[float]]) -> Optional[Spread]:
    """Median with min/max over the repeats that produced a number (None and NaN are skipped)."""
    usable = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not usable:
        return None
    return Spread(statistics.median(usable), min(usable), max(usable), len(usable))


def littles_law_inflight(rps: float, mean_latency_us: float) -> float:
    """Average requests in flight: L = throughput (req/s) x mean latency (s)."""
    if rps < 0 or mean_latency_us < 0:
        raise ValueError("rps and latency must be non-negative")
    return rps * mean_latency_us / 1e6


def is_starved(inflight: float, connections: int, fraction: float = STARVED_FRACTION) -> bool:
    """True when fewer than ``fraction`` x ``connections`` requests were in flight on average."""
    if connections <= 0:
        raise ValueError("connections must be positive")
    return inflight < fraction * connections


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
        better = best_key is None or (value > best_value if higher_is_better else value < best_value)
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


def arithmetic_mean(values: Sequence[Optional[float]]) -> Optional[float]:
    """Mean of the defined values (the 'average throughput across scenarios' of the charts)."""
    usable = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return sum(usable) / len(usable) if usable else None
