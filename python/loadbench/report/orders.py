"""Who is ahead of whom, per protocol: the orders the figures make certain, as tiers.

A protocol's servers, sorted by their figure, split into **tiers** wherever every server before
the split is certainly above every server after it (:func:`loadbench.core.figures.compare`:
beyond the repeats' noise, and beyond any bound - a generator-bound peak counts up to its CPU
ceiling). Inside a tier the neighbours are within noise (or their bounds leave the order
open); the pairs inside it that *are* certain are kept too (:attr:`Tier.inner`), so every
certain order can be said. The headline writes a tier as "a ≈ b ≈ c" and the splits as ">".

    tiers = protocol_tiers(model, "http")     # [Tier(['beast', 'nginx', ...]), Tier(['h2o']), ...]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from ..core import analysis
from ..core.analysis import Figure
from .model import Model


@dataclass
class Tier:
    """Servers no split separates, best first: ``open`` when some pair's order is open because
    of bounds (not only noise); ``noise`` the largest half-range of the repeats among them (the
    "±N %"); ``inner`` the certain pairs (above, below) inside the tier."""

    members: list[str]
    open: bool = False
    noise: float = 0.0
    inner: list[tuple[str, str]] = field(default_factory=list)


def tiers(values: dict[str, Optional[Figure]], higher_is_better: bool = True) -> list[Tier]:
    """The tiers of ``values`` (servers without a figure left out), best tier first."""
    have = {t: v for t, v in values.items() if v is not None}
    order = sorted(have, key=lambda t: float(have[t]), reverse=higher_is_better)

    def verdict(x: str, y: str) -> str:
        return analysis.compare(have[x], have[y], higher_is_better)

    out: list[Tier] = []
    start = 0
    for i in range(1, len(order) + 1):
        split = i == len(order) or all(
            verdict(a, b) == "better" for a in order[:i] for b in order[i:]
        )
        if not split:
            continue
        members = order[start:i]
        tier = Tier(members)
        for j, a in enumerate(members):
            for b in members[j + 1 :]:
                v = verdict(a, b)
                if v == "better":
                    tier.inner.append((a, b))
                tier.open = tier.open or v == "open"
        if len(members) > 1:
            tier.noise = max(analysis.noise_share(have[t]) for t in members)
        out.append(tier)
        start = i
    return out


def protocol_peaks(model: Model, protocol: str) -> dict[str, Optional[Figure]]:
    """Each listed server's peak req/s over one protocol (None where it has no ranked cell)."""
    return {t: model.peak(t, protocol) for t in model.listed}


def protocol_tiers(model: Model, protocol: str) -> list[Tier]:
    """The tiers of one protocol's peaks: like compared with like."""
    return tiers(protocol_peaks(model, protocol))


def capacity_figures(model: Model, protocol: str) -> dict[str, Optional[Figure]]:
    """Each server's capacity over ``protocol`` (median of its searches, [L, U] where the
    generator was the limit), with the rates between its capacity and its first failing rate
    as the noise: a bisection to 5 % cannot order two capacities closer than that.

    A bound with no upper end (searches that other processes disturbed) is closed by the
    server's closed-loop peak over the protocol, its repeats' highest (:func:`peak_closed`): no
    server keeps a latency objective at more requests a second than it answers at all. Without
    it one such bound made every server below it "order open"."""
    out: dict[str, Optional[Figure]] = {}
    for (t, p), cell in model.capacities().items():
        if p != protocol or t not in model.listed:
            continue
        f = cell.figure
        if f is None:
            out[t] = None
            continue
        low, high = f.spread or (float(f), float(f))
        failing = [s.get("first_failing") for s in cell.searches if s.get("first_failing")]
        if failing and f.bound is None:  # a bound's failing step was the generator's, not noise
            high = max(high, *failing)
        out[t] = Figure(
            float(f), f.bound, f.bounded, f.cells, peak_closed(model, t, protocol, f), (low, high)
        )
    return out


def peak_closed(model: Model, target: str, protocol: str, f: Figure) -> tuple[float, float]:
    """``f``'s interval, an infinite upper end replaced by the server's closed-loop peak over
    ``protocol`` (the top of its repeats' range and of its own interval) when that lies above
    the lower end."""
    low, high = f.interval
    peak = model.peak(target, protocol)
    if math.isfinite(high) or peak is None:
        return low, high
    top = analysis.noise_range(peak)[1]
    return (low, top) if math.isfinite(top) and top >= low else (low, high)


def nearest(values: dict[str, Optional[float]], target: str) -> Optional[str]:
    """The other server whose figure is nearest ``target``'s, as a ratio (memory against the
    closest peer, not the worst)."""
    mine = values.get(target)
    others = {t: v for t, v in values.items() if t != target and v}
    if not mine or not others:
        return None
    return min(others, key=lambda t: max(others[t], mine) / min(others[t], mine))
