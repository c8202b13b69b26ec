"""Intervals from the spread between replications, and paired comparisons within blocks.

A sweep's repeat is an independent replication: a freshly started server process, measured in
a block of the sweep in which every server runs once, in an order shuffled from a recorded
seed (sweep/runner.py). So repeat r of every server saw the same minutes of the machine, and
the spread between a server's repeats is the spread between processes and minutes - where
this VM's variance lives (reports/variance-split.md) - not the spread of seconds of one burst.

Two rules, each defined once here and used by every "±", "≈" and ">" a report writes
(:mod:`loadbench.core.figures`):

- **A figure's interval** is the Student-t confidence interval of the replications' mean at
  ``LEVEL`` (95 %): mean ± t(0.975, n-1) x s / sqrt(n), widened to hold the median (the figure
  a table prints). With three replications t = 4.30, so the half-width is 2.5 standard
  deviations of one replication: about the 90 % prediction interval of the mean a second sweep
  will read, which is what a reader checks a report against. One replication has no interval.
- **Two servers are ordered** only when the confidence interval of their paired ratio lies
  wholly beyond 1 +- ``RESOLUTION`` (duet benchmarking: A's and B's repeat r ran in the same
  block, so a slow minute slows both and cancels in the ratio). Without two paired blocks the
  intervals must not overlap (a conservative unpaired test).
"""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

LEVEL = 0.95
# The smallest difference a sweep orders: a paired ratio is an order only when its whole
# interval lies beyond 1 +- RESOLUTION. A server listed twice (an A/A pair) differs by nothing,
# and with several protocols and metrics a 95 % interval alone would order one of its figures
# by chance about once in five sweeps; a 3 % margin leaves that to a far rarer chance and still
# orders a server 10 % slower than its twin (tests/test_replication.py).
RESOLUTION = 0.03

# Two-sided Student-t quantiles t(1 - (1 - LEVEL) / 2, df) for df = 1..30 (beyond: the normal
# 1.96 within 2 %). A table, so the report needs no scipy import for its arithmetic.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile(df: int) -> float:
    """t(0.975, df): the multiplier of the standard error in a 95 % interval."""
    if df < 1:
        raise ValueError("a t interval needs at least two values (df >= 1)")
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.4 / df


def mean_interval(values: Sequence[float]) -> Optional[tuple[float, float]]:
    """The 95 % Student-t interval of the mean of ``values`` (None for fewer than two)."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n < 2:
        return None
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def figure_interval(values: Sequence[float], median: float) -> Optional[tuple[float, float]]:
    """A figure's interval: :func:`mean_interval` widened to hold ``median`` (the value the
    report prints); None for one replication."""
    ci = mean_interval(values)
    if ci is None:
        return None
    return min(ci[0], median), max(ci[1], median)


def paired_log_ratios(a: Mapping, b: Mapping) -> list[float]:
    """log(a[k] / b[k]) over the blocks both measured with positive values."""
    out = []
    for k in sorted(set(a) & set(b), key=str):
        x, y = a[k], b[k]
        if x is None or y is None or not (x > 0 and y > 0):
            continue
        out.append(math.log(float(x) / float(y)))
    return out


def paired_ratio_interval(a: Mapping, b: Mapping) -> Optional[tuple[float, float]]:
    """The 95 % interval of A / B from the blocks both ran in (the geometric mean of the
    per-block ratios and its t interval), None with fewer than two shared blocks."""
    ci = mean_interval(paired_log_ratios(a, b))
    if ci is None:
        return None
    return math.exp(ci[0]), math.exp(ci[1])


def paired_verdict(a: Mapping, b: Mapping, higher_is_better: bool) -> Optional[str]:
    """ "better" / "worse" (A against B) when the paired ratio's interval lies wholly beyond
    the sweep's resolution (RESOLUTION either side of 1), "noise" otherwise, None when fewer
    than two blocks pair them (the caller falls back to the unpaired rule)."""
    ratio = paired_ratio_interval(a, b)
    if ratio is None:
        return None
    if ratio[0] > 1 + RESOLUTION:
        return "better" if higher_is_better else "worse"
    if ratio[1] < 1 / (1 + RESOLUTION):
        return "worse" if higher_is_better else "better"
    return "noise"
