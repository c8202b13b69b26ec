"""What a report number proves: a :class:`Figure` is a float that carries the interval the
server's true value is known to lie in and the spread its repeats showed, and the orders between
figures follow only from those.

Two different doubts, kept apart because a reader acts on them differently:

- **Bounds** (proof). A generator-bound cell measured at least what the server can do, so its
  req/s is a lower bound ("≥"); the server's CPU ceiling (cores / CPU time per response,
  :mod:`loadbench.core.limits`) closes it from above, so the value lies in [measured, ceiling].
  An order is *certain* when one figure's interval lies wholly above the other's: X's lower end
  above Y's upper end (its ceiling, or its exact value).
- **Noise** (the replications). A median of three runs that spread over 12 % says little about
  a 3 % difference. Each figure carries the 95 % confidence interval of its replications
  (core/replication.py: fresh server processes, one per sweep block). Two figures whose
  replications ran in the same blocks differ *beyond noise* when the interval of their paired
  ratio excludes 1 (duet benchmarking); others when their ranges - the interval widened by the
  confidence interval - do not overlap. Inside that a difference is "within noise (±N %)",
  never an order.

:func:`compare` gives the one verdict every sentence and rank uses; :func:`certain_ranks` turns
them into places. :func:`figure_max`, :func:`figure_mean` and :func:`figure_ratio` carry both
doubts through a peak, an average and a ratio (interval arithmetic on non-negative numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

from . import replication

INF = math.inf


class Figure(float):
    """A report number and what it proves about the server: a float (arithmetic, formatting
    and comparisons work as on the value) carrying its bound.

    ``bound``: None - measured; "lower" - the true value is at least this (a generator-bound
    cell entered it: "≥"); "upper" - at most this ("≤", e.g. the mean latency of such a cell,
    or a ratio over a lower bound); "unknown" - a ratio of two bounds in the same direction,
    which bounds nothing by itself. ``bounded`` of ``cells``: how many of the cells behind the
    figure are bounds (an average names them).

    ``interval``: (low, high), where the true value is known to lie; by default what the bound
    says (a lower bound is open above). A lower bound with a CPU ceiling has a finite high end
    (:attr:`ceiling`). ``spread``: (low, high), the confidence interval from the spread between
    the replications behind the figure (core/replication.py; None: one run, or unknown) - the
    noise, not a proof. ``samples``: {block: value} of those replications where they ran in
    sweep blocks, so two figures are compared paired within blocks (None: not paired)."""

    bound: Optional[str]
    bounded: int
    cells: int
    interval: tuple
    spread: Optional[tuple]
    samples: Optional[dict]

    def __new__(
        cls,
        value: float,
        bound: Optional[str] = None,
        bounded: int = 0,
        cells: int = 1,
        interval: Optional[tuple] = None,
        spread: Optional[tuple] = None,
        samples: Optional[Mapping] = None,
    ) -> "Figure":
        if bound not in (None, "lower", "upper", "unknown"):
            raise ValueError(f"bound must be None, 'lower', 'upper' or 'unknown', not {bound!r}")
        obj = super().__new__(cls, value)
        v = float(value)
        default = {
            None: (v, v),
            "lower": (v, INF),
            "upper": (-INF, v),
            "unknown": (-INF, INF),
        }[bound]
        low, high = interval if interval is not None else default
        # the value is always inside its interval (a ceiling below the measured value, from a
        # repeat whose CPU reading was off, proves nothing beyond the value itself)
        obj.interval = (min(float(low), v), max(float(high), v))
        obj.bound, obj.bounded, obj.cells = bound, bounded, cells
        obj.spread = None if spread is None else (float(spread[0]), float(spread[1]))
        obj.samples = dict(samples) if samples else None
        return obj

    def __reduce__(self):
        return (
            Figure,
            (
                float(self),
                self.bound,
                self.bounded,
                self.cells,
                self.interval,
                self.spread,
                self.samples,
            ),
        )

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

    @property
    def ceiling(self) -> Optional[float]:
        """The finite upper end of a lower bound (the server's CPU ceiling), else None."""
        high = self.interval[1]
        return high if self.bound == "lower" and math.isfinite(high) else None


def bound_of(value: object) -> Optional[str]:
    """The bound of a number (None for a plain float or a measured Figure)."""
    return getattr(value, "bound", None)


def interval(value: float) -> tuple[float, float]:
    """Where the true value is known to lie: the figure's interval, (v, v) for a plain float."""
    return getattr(value, "interval", None) or (float(value), float(value))


def noise_range(value: float) -> tuple[float, float]:
    """The interval widened by the repeats' min and max: where the value may lie, noise
    included."""
    low, high = interval(value)
    spread = getattr(value, "spread", None)
    if spread:
        low, high = min(low, spread[0]), max(high, spread[1])
    return low, high


def noise_share(value: float) -> float:
    """Half the confidence interval as a share of the value: the "±" of "within noise (±8 %)"."""
    spread = getattr(value, "spread", None)
    if not spread or not float(value):
        return 0.0
    return (spread[1] - spread[0]) / 2 / abs(float(value))


def open_ended(value: object, higher_is_better: bool) -> bool:
    """Whether the true value may be *better* than the figure: a lower bound of a
    higher-is-better metric (req/s), an upper bound of a lower-is-better one (latency), or a
    figure whose bound is unknown."""
    bound = bound_of(value)
    return bound == "unknown" or bound == ("lower" if higher_is_better else "upper")


def _above(x: tuple, y: tuple, higher_is_better: bool) -> bool:
    """Range x lies wholly on the better side of range y."""
    return x[0] > y[1] if higher_is_better else x[1] < y[0]


def certainly_better(x: float, y: float, higher_is_better: bool) -> bool:
    """X's true value is better than Y's for sure: X's interval lies wholly on the better side
    of Y's - e.g. X's lower bound above Y's CPU ceiling or exact value."""
    return _above(interval(x), interval(y), higher_is_better)


def clearly_better(x: float, y: float, higher_is_better: bool) -> bool:
    """Better for sure and beyond noise: X's range (interval and repeats) lies wholly on the
    better side of Y's."""
    return _above(noise_range(x), noise_range(y), higher_is_better)


def samples_of(value: object) -> Optional[dict]:
    """{block: value} of a figure's replications, None when they did not run in blocks."""
    return getattr(value, "samples", None)


def paired(x: float, y: float, higher_is_better: bool) -> Optional[str]:
    """The verdict of X against Y paired within sweep blocks (core/replication.py): only for
    two measured figures (a bound's order is the intervals' business) that share at least two
    blocks; None otherwise."""
    if bound_of(x) is not None or bound_of(y) is not None:
        return None
    a, b = samples_of(x), samples_of(y)
    if not a or not b:
        return None
    return replication.paired_verdict(a, b, higher_is_better)


def compare(x: float, y: float, higher_is_better: bool) -> str:
    """The one verdict between two figures: "better" or "worse" (X against Y, certain and
    beyond noise), "open" (the bounds leave the order open: an interval is wider than its value
    and overlaps the other), or "noise" (the difference is inside the replications' spread).
    Two measured figures whose replications ran in the same blocks are compared paired (their
    per-block ratio's interval); others by whether their intervals overlap."""
    verdict = paired(x, y, higher_is_better)
    if verdict in ("better", "worse"):
        return verdict
    # intervals that do not overlap order two figures whatever the pairing says (the paired
    # rule's resolution margin must not undo an order the figures' own intervals prove)
    if clearly_better(x, y, higher_is_better):
        return "better"
    if clearly_better(y, x, higher_is_better):
        return "worse"
    if verdict is not None:
        return verdict
    ix, iy = interval(x), interval(y)
    proven = _above(ix, iy, higher_is_better) or _above(iy, ix, higher_is_better)
    if not proven and (ix[0] < ix[1] or iy[0] < iy[1]):
        return "open"
    return "noise"


def pair_noise(x: float, y: float) -> float:
    """The "±N %" of a pair within noise: half the width of their paired ratio's interval
    where they ran in the same blocks, else the larger of the two figures' half-ranges."""
    a, b = samples_of(x), samples_of(y)
    if a and b and bound_of(x) is None and bound_of(y) is None:
        ci = replication.paired_ratio_interval(a, b)
        if ci is not None:
            return (ci[1] - ci[0]) / 2
    return max(noise_share(x), noise_share(y))


def _figure(
    value: float,
    low: float,
    high: float,
    spread: Optional[tuple],
    bounded: int,
    cells: int,
    unknown: bool = False,
    samples: Optional[Mapping] = None,
) -> "Figure":
    """A Figure from its interval: measured when the interval is the value, a lower (upper)
    bound when it reaches only above (below) it, "unknown" when the inputs bound nothing."""
    if unknown:
        bound: Optional[str] = "unknown"
    elif high > value and low >= value:
        bound = "lower"
    elif low < value and high <= value:
        bound = "upper"
    elif low < value < high:
        bound = "unknown"
    else:
        bound = None
    return Figure(value, bound, bounded, cells, (low, high), spread, samples)


def _counts(figures: Sequence[float]) -> tuple[int, int]:
    return (
        sum(getattr(f, "bounded", int(bound_of(f) is not None)) or 0 for f in figures),
        sum(getattr(f, "cells", 1) for f in figures),
    )


def _spread(value: float) -> tuple[float, float]:
    """The repeats' range of a figure, (v, v) when it has none: only what was measured (a
    bound's open end is its interval's business, not the noise's)."""
    return getattr(value, "spread", None) or (float(value), float(value))


def figure_max(figures: Sequence[float]) -> Optional[Figure]:
    """The largest of several figures (a peak over cells): value, interval and the repeats'
    range are each the maximum of the parts' - any bounded part may hide a higher value."""
    figures = [f for f in figures if f is not None and not math.isnan(float(f))]
    if not figures:
        return None
    ranges = [interval(f) for f in figures]
    noise = [_spread(f) for f in figures]
    bounded = sum(1 for f in figures if bound_of(f))
    return _figure(
        max(float(f) for f in figures),
        max(r[0] for r in ranges),
        max(r[1] for r in ranges),
        (max(n[0] for n in noise), max(n[1] for n in noise)),
        bounded,
        len(figures),
        samples=_block_extremes(figures, max),
    )


def figure_min(figures: Sequence[float]) -> Optional[Figure]:
    """The smallest of several figures (the best CPU per response, the lowest latency)."""
    figures = [f for f in figures if f is not None and not math.isnan(float(f))]
    if not figures:
        return None
    ranges = [interval(f) for f in figures]
    noise = [_spread(f) for f in figures]
    return _figure(
        min(float(f) for f in figures),
        min(r[0] for r in ranges),
        min(r[1] for r in ranges),
        (min(n[0] for n in noise), min(n[1] for n in noise)),
        sum(1 for f in figures if bound_of(f)),
        len(figures),
        samples=_block_extremes(figures, min),
    )


def _block_extremes(figures: Sequence[float], pick: Callable) -> Optional[dict]:
    """{block: the best of the figures' values in that block} over the blocks every figure ran
    in: a peak's replications are the peak of each block, so two peaks compared paired both
    carry the same selection (the best cell of each block). Taking the replications of the
    cell whose median was best instead ordered beast-again 1.26x above beast on https in one
    sweep: the best of three noisy cells, chosen by its median, is the lucky one."""
    parts = [samples_of(f) for f in figures]
    if not parts or any(not p for p in parts):
        return None
    shared = set(parts[0]).intersection(*parts[1:])
    return {b: pick(p[b] for p in parts) for b in shared} or None


def figure_mean(figures: Sequence[float]) -> Optional[Figure]:
    """The arithmetic mean of several figures (an average over cells), with the mean of their
    intervals and of their repeats' ranges; ``bounded`` of ``cells`` count the parts that were
    bounds."""
    figures = [f for f in figures if f is not None and not math.isnan(float(f))]
    if not figures:
        return None
    n = len(figures)
    ranges = [interval(f) for f in figures]
    noise = [_spread(f) for f in figures]
    return _figure(
        sum(float(f) for f in figures) / n,
        sum(r[0] for r in ranges) / n,
        sum(r[1] for r in ranges) / n,
        (sum(r[0] for r in noise) / n, sum(r[1] for r in noise) / n),
        sum(1 for f in figures if bound_of(f)),
        n,
        samples=_block_means(figures),
    )


def _block_means(figures: Sequence[float]) -> Optional[dict]:
    """{block: mean over the figures of their value in that block}, over the blocks every
    figure ran in (an average paired within blocks); None when any figure is not in blocks."""
    parts = [samples_of(f) for f in figures]
    if not parts or any(not p for p in parts):
        return None
    shared = set(parts[0]).intersection(*parts[1:])
    return {b: sum(p[b] for p in parts) / len(parts) for b in shared} or None


_FLIP = {"lower": "upper", "upper": "lower"}


def _quotient(top: tuple, bottom: tuple) -> tuple[float, float]:
    """[a, b] / [c, d] for non-negative ranges (an infinite or zero end stays open)."""
    low = top[0] / bottom[1] if bottom[1] not in (0, INF) else (0.0 if bottom[1] == INF else INF)
    high = top[1] / bottom[0] if bottom[0] > 0 else INF
    return max(0.0, low), high


def figure_ratio(top: Optional[float], bottom: Optional[float]) -> Optional[Figure]:
    """top / bottom with the bound that follows from theirs: a lower bound over a measured
    value (or over an upper bound) is a lower bound, a measured value over a lower bound an
    upper bound; two bounds in the same direction give "unknown" - unless their ceilings close
    the interval, which the ratio then carries. None when undefined."""
    if top is None or not bottom or math.isnan(top) or math.isnan(bottom):
        return None
    a, b = bound_of(top), bound_of(bottom)
    low, high = _quotient(interval(top), interval(bottom))
    value = float(top) / float(bottom)
    spread = _quotient(_spread(top), _spread(bottom))
    ratios = _block_ratios(top, bottom)
    if ratios is not None:  # paired within blocks: the ratio's own interval (duet benchmarking)
        ci = replication.paired_ratio_interval(samples_of(top), samples_of(bottom))
        if ci is not None:
            spread = (min(ci[0], value), max(ci[1], value))
    if "unknown" in (a, b) or (a is not None and a == b):
        bound: Optional[str] = "unknown"
        return Figure(value, bound, interval=(low, high), spread=spread)
    bound = a or (_FLIP[b] if b else None)
    if bound == "lower":
        low = value  # a ratio of measured ends never reads below the figure itself
    elif bound == "upper":
        high = value
    return Figure(value, bound, interval=(low, high), spread=spread, samples=ratios)


def _block_ratios(top: float, bottom: float) -> Optional[dict]:
    """{block: top / bottom} over the blocks both ran in, None when either is not in blocks."""
    a, b = samples_of(top), samples_of(bottom)
    if not a or not b:
        return None
    return {k: a[k] / b[k] for k in set(a) & set(b) if b[k]} or None


@dataclass(frozen=True)
class Rank:
    """A server's place by one metric, as far as the figures make it certain: ``best`` and
    ``worst`` possible places (equal when the place is certain; tied measured figures share a
    place), the servers the order against which is ``uncertain``, and of those the ones only
    the repeats' ``noise`` separates (the rest are open because of bounds)."""

    best: int
    worst: int
    uncertain: tuple = ()
    open_ended: bool = False  # the server's own figure is a bound that may hide a better value
    noise: tuple = ()

    @property
    def certain(self) -> bool:
        return self.best == self.worst

    def text(self) -> str:
        """'3', 'at least 2nd (uncertain against h2o)', '1st-2nd (within noise of nginx)'."""
        if self.certain:
            return str(self.best)
        against = f" ({self.why()})"
        if self.open_ended and self.best == 1 and not self.noise:
            return f"at least {ordinal(self.worst)}{against}"
        return f"{ordinal(self.best)}-{ordinal(self.worst)}{against}"

    def why(self) -> str:
        """'within noise of nginx; uncertain against h2o' (bounds on both sides)."""
        bounds = [t for t in self.uncertain if t not in self.noise]
        parts = [f"within noise of {', '.join(self.noise)}"] if self.noise else []
        if bounds:
            parts.append(f"uncertain against {', '.join(bounds)}")
        return "; ".join(parts)


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def ranks_by(
    keys: Sequence[str], verdict: Callable[[str, str], str], open_end: Mapping[str, bool]
) -> dict[str, Rank]:
    """Places from pairwise verdicts (``verdict(x, y)``: :func:`compare` of X against Y, or
    "tie" for a shared place): best = 1 + the keys certainly better beyond noise, worst = best +
    the keys whose order is open or within noise. ``open_end``: whether a key's own figure may
    hide a better value (it reads "at least 2nd")."""
    out = {}
    for k in keys:
        above, unsure, noisy = 0, [], []
        for other in keys:
            if other == k:
                continue
            v = verdict(other, k)
            if v == "better":
                above += 1
            elif v in ("worse", "tie"):
                continue
            else:
                unsure.append(other)
                if v == "noise":
                    noisy.append(other)
        out[k] = Rank(
            1 + above, 1 + above + len(unsure), tuple(unsure), open_end.get(k, False), tuple(noisy)
        )
    return out


def certain_ranks(
    values: Mapping[str, Optional[float]], *, higher_is_better: bool
) -> dict[str, Rank]:
    """The :class:`Rank` of every key with a value (bounds and spreads read from
    :class:`Figure` values): best = 1 + the keys certainly better beyond noise, worst = best +
    the keys whose order against it is open or within noise. Keys without a value are left
    out. Figures that are measured and equal share a place."""
    have = {k: v for k, v in values.items() if v is not None and not math.isnan(float(v))}

    def verdict(x: str, y: str) -> str:
        v, w = have[x], have[y]
        if interval(v) == interval(w) == (float(v), float(v)):
            return "tie"  # measured and equal: a shared place
        return compare(v, w, higher_is_better)

    return ranks_by(
        list(have), verdict, {k: open_ended(v, higher_is_better) for k, v in have.items()}
    )
