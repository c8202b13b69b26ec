"""A sweep's capacity cells (mode "capacity": one :func:`loadbench.capacity` search per
repeat, its every step kept in the record), folded per server and protocol.

Capacity records carry no single req/s or latency, so :mod:`loadbench.report.model` keeps them
out of every load aggregate (as it does hold cells) and exposes them through
``Model.capacities()``, which calls :func:`fold` here; report/capacity.py lays them out.

What one search proves (:func:`search_interval`): a found capacity is a number; a search the
generator (or its pool) limited knows only [L, U] - L the highest rate that passed on time, U the
server's CPU ceiling at that step (the result's ``ceiling``, else read from the step's ``limit``
block or computed by core/limits.py from its server block). The cell's :class:`Figure` is the
median of its repeats (each on a freshly started server) with their range as the noise, never
one search's luck.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from ..core import analysis
from ..core.analysis import Figure, Spread
from ..core.limits import limited_by
from .rows import pinned_cores

CAPACITY_MODE = "capacity"
# Outcomes whose CPU ceiling closes the capacity from above: the generator or its pool was the
# limit near the rate where the server's own CPU per response was measured. Not "contended"
# (the search's own BOUNDED_OUTCOMES): its highest passing step may lie far below the capacity,
# where each response costs more CPU (fewer per wake-up), and steal inflates it - a contended
# search of python-asyncio passed only 8 198 req/s and put its ceiling at 15 326, while another
# search of the same server found 21 743 (reports/2026-12-03-vm): such a ceiling closes nothing.
CEILING_OUTCOMES = ("generator-bound", "pool-bound")


def is_capacity(record: dict) -> bool:
    return record.get("mode") == CAPACITY_MODE


def step_limit(step: dict, server_cores: Optional[int] = None) -> Optional[dict]:
    """Who limited one step (Limit.to_dict()): its stored ``limit`` block, else the rule of
    core/limits.py on its result (None when the step kept no result)."""
    if isinstance(step.get("limit"), dict):
        return step["limit"]
    result = step.get("result")
    if not isinstance(result, dict):
        return None
    return limited_by(result, server_cores=server_cores).to_dict()


def search_ceiling(search: dict, server_cores: Optional[int] = None) -> Optional[float]:
    """U: the server's CPU ceiling at the least CPU per response any step measured (the rule of
    slo/search.py), from the steps' limits - also for a search written when U was read at its
    highest passing step - else the result's ``ceiling`` (None when unknown)."""
    ceilings = [
        (step_limit(s, server_cores) or {}).get("ceiling_rps") for s in search.get("steps") or []
    ]
    known = [float(c) for c in ceilings if c]
    if known:
        return max(known)
    return float(search["ceiling"]) if search.get("ceiling") else None


def search_interval(
    search: dict, server_cores: Optional[int] = None
) -> Optional[tuple[float, float]]:
    """(low, high) of the server's capacity as one search knows it: (c, c) when found; (L, U)
    when the generator or its pool was the limit (U infinite without a ceiling); (L, inf) for
    any other outcome with a passing rate (contended: CEILING_OUTCOMES); None when nothing
    passed."""
    if search.get("outcome") == "capacity" and search.get("capacity") is not None:
        c = float(search["capacity"])
        return c, c
    low = search.get("lower_bound")
    if low is None:
        return None
    high = math.inf
    if search.get("outcome") in CEILING_OUTCOMES:
        ceiling = search_ceiling(search, server_cores)
        if ceiling and ceiling > low:
            high = float(ceiling)
    return float(low), high


@dataclass
class CapacityCell:
    """One server's searches over one protocol (its repeats), folded."""

    target: str
    protocol: str
    workload: str
    connections: int
    status: str  # "ok": a search ran (whatever it found); "fail" / "skipped": none did
    objectives: list[str] = field(default_factory=list)
    note: Optional[str] = None
    searches: list[dict] = field(default_factory=list)  # the records' results, in order
    server_cores: Optional[int] = None  # the CPUs the server was pinned to (older results)
    # (rate, replications): the highest rate an open-loop cell of the same sweep met the
    # objectives at, judged by the search's own rule in every one of its replications (each on
    # a fresh server) - a capacity is never stated below it (open_loop_evidence)
    open_loop: Optional[tuple[float, int]] = None
    # the CPU ceiling the whole folder proves for this server and protocol (report/ceilings.py):
    # None when it has none or dropped it; unset (the searches' own) for a cell folded alone
    folder_ceiling: Optional[float] = math.nan

    @property
    def outcomes(self) -> list[str]:
        return [s.get("outcome", "?") for s in self.searches]

    def trusted(self) -> list[dict]:
        """The searches the figure is made of: those other processes did not disturb, when any
        were (as a contended load cell is left out of the peaks); else all, flagged."""
        clean = [s for s in self.searches if s.get("outcome") != "contended"]
        return clean or self.searches

    def intervals(self) -> list[tuple[float, float]]:
        """Each trusted search's (low, high), in the order they ran (searches that passed
        nothing left out)."""
        return [
            iv for s in self.trusted() if (iv := search_interval(s, self.server_cores)) is not None
        ]

    @property
    def figure(self) -> Optional[Figure]:
        """The capacity over the repeats: the median of each search's low end, the interval
        from the medians of both ends (found: exact; generator-bound: [L, U]), and the range of
        the low ends as the noise. None when no search passed any rate.

        A lower bound's upper end is only ever a CPU ceiling (:attr:`ceiling`, infinite without
        one): the median of the high ends may be another search's found capacity (two found,
        one contended), and every reader prints the upper end as "at most N by CPU"."""
        ivs = self.intervals()
        if not ivs and self.open_loop is None:
            return None
        lows = [lo for lo, _ in ivs]
        low = analysis.median(lows) if ivs else 0.0
        high = analysis.median([hi for _, hi in ivs]) if ivs else math.inf
        if high > low:
            ceiling = self.ceiling
            high = ceiling if ceiling and ceiling > low else math.inf
        if self.raised_by_open_loop:
            # the same rule passed a higher rate on fresh servers: the capacity is at least that
            low = self.open_loop[0]
            ceiling = self.ceiling
            high = ceiling if ceiling and ceiling > low else math.inf
        return Figure(
            low,
            "lower" if high > low else None,
            sum(1 for lo, hi in ivs if hi > lo),
            max(len(ivs), 1),
            (low, high),
            (min(lows), max(lows)) if len(ivs) > 1 and not self.raised_by_open_loop else None,
        )

    @property
    def raised_by_open_loop(self) -> bool:
        """The open-loop cells passed a rate above what the searches state (open_loop)."""
        if self.open_loop is None:
            return False
        ivs = self.intervals()
        return not ivs or self.open_loop[0] > analysis.median([lo for lo, _ in ivs])

    @property
    def bound_by(self) -> Optional[str]:
        """Why the capacity is a bound, in the searches' own word: "generator-bound" (the
        generator's threads or loop, core/limits.py), "pool-bound" (sends waited for a free
        connection while the generator kept up) or "contended" - the outcome most of the
        trusted searches that found no capacity name (None when every one found it)."""
        bounded = [o for o in (s.get("outcome") for s in self.trusted()) if o != "capacity"]
        bounded = [o for o in bounded if o in (*CEILING_OUTCOMES, "contended")]
        return max(CEILING_OUTCOMES + ("contended",), key=bounded.count) if bounded else None

    @property
    def capacity(self) -> Optional[Spread]:
        """Median, min and max over the repeats that found a capacity (None: none did)."""
        return analysis.median_spread([s.get("capacity") for s in self.searches])

    @property
    def lower_bound(self) -> Optional[float]:
        """The median over the searches that found no capacity of the highest rate they passed:
        the capacity is above it (None when none passed a rate)."""
        bounds = [s.get("lower_bound") for s in self.searches if s.get("outcome") != "capacity"]
        return analysis.median([b for b in bounds if b is not None])

    @property
    def ceiling(self) -> Optional[float]:
        """U of [L, U]: the folder's CPU ceiling for the server and protocol when the cell was
        folded with one (the least CPU per response measured anywhere; report/ceilings.py),
        else the median CPU ceiling of the generator- or pool-bound searches."""
        if self.folder_ceiling is None or not math.isnan(self.folder_ceiling):
            return self.folder_ceiling
        ceilings = [
            search_ceiling(s, self.server_cores)
            for s in self.trusted()
            if s.get("outcome") in CEILING_OUTCOMES
        ]
        return analysis.median([c for c in ceilings if c])

    @property
    def first_failing(self) -> Optional[float]:
        rates = [s.get("first_failing") for s in self.searches if s.get("first_failing")]
        return analysis.median(rates) if rates else None

    @property
    def failing_objective(self) -> Optional[str]:
        return next(
            (s["failing_objective"] for s in self.searches if s.get("failing_objective")), None
        )

    @property
    def contended_steps(self) -> int:
        """Steps other processes disturbed even after their re-runs (flagged, kept)."""
        return sum(1 for step in self.steps() if step.get("contended"))

    def steps(self) -> list[dict]:
        return [step for s in self.searches for step in s.get("steps") or []]

    def at_capacity(self) -> list[dict]:
        """The steps run at a search's capacity rate (the search's pass and its confirmations)."""
        return [
            step
            for s in self.searches
            if s.get("capacity") is not None
            for step in s.get("steps") or []
            if step.get("rate") == s["capacity"]
        ]

    @property
    def cpu_us_at_capacity(self) -> Optional[float]:
        values = [s.get("server_cpu_us_per_req") for s in self.at_capacity()]
        values = [v for v in values if v is not None]
        return analysis.median(values) if values else None

    @property
    def achieved_at_capacity(self) -> Optional[Spread]:
        return analysis.median_spread([s.get("achieved_rate") for s in self.at_capacity()])


def fold(
    records: list[dict],
    server_cores: Optional[int] = None,
    ceilings: Optional[dict] = None,
) -> dict[tuple[str, str], CapacityCell]:
    """Per (server, protocol) its capacity records folded, repeats in the order they ran.
    ``server_cores``: the CPUs the sweep pinned servers to (len of sweep.json's server_cpus),
    for steps whose server block predates its ``cores``. ``ceilings``: the folder's CPU ceiling
    per (server, protocol) (report/ceilings.py), read as each cell's U."""
    out: dict[tuple[str, str], CapacityCell] = {}
    for r in sorted((r for r in records if is_capacity(r)), key=lambda r: r.get("repeat") or 0):
        key = (r.get("target"), r.get("protocol"))
        cell = out.get(key)
        if cell is None:
            cores = pinned_cores(r.get("server"), "cpus") or server_cores
            cell = out[key] = CapacityCell(
                r.get("target"),
                r.get("protocol"),
                r.get("workload"),
                r.get("connections"),
                "skipped",
                server_cores=cores,
            )
            if ceilings is not None and key in ceilings:
                cell.folder_ceiling = ceilings[key]
        result = r.get("result") or {}
        if r.get("status") == "ok" and result:
            cell.status = "ok"
            cell.searches.append(result)
            cell.objectives = result.get("objectives") or cell.objectives
        else:
            if cell.status != "ok":
                cell.status = r.get("status") or "fail"
            cell.note = cell.note or r.get("error")
    return out


def open_loop_evidence(rows: list[dict]) -> dict[tuple[str, str], tuple[float, int]]:
    """Per (server, protocol): the highest rate whose open-loop cell met the objectives in every
    one of at least two replications (rows of one load judged by the search's rule, slo_passed),
    as (the lowest rate any of them was sent, how many) - evidence a capacity must not deny."""
    by_cell: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("mode") == "open" and r.get("status") == "ok":
            by_cell.setdefault((r["target"], r["protocol"], r.get("load")), []).append(r)
    out: dict[tuple[str, str], tuple[float, int]] = {}
    for (target, protocol, _), group in by_cell.items():
        rates = [r.get("target_rate") for r in group]
        if len(group) < 2 or not all(r.get("slo_passed") is True for r in group):
            continue
        if any(rate is None for rate in rates):
            continue
        best = out.get((target, protocol))
        if best is None or min(rates) > best[0]:
            out[(target, protocol)] = (float(min(rates)), len(group))
    return out
