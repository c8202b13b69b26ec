"""A sweep's capacity cells (mode "capacity": one :func:`loadbench.capacity` search per
repeat, its every step kept in the record), folded per server and protocol.

Capacity records carry no single req/s or latency, so :mod:`loadbench.report.model` keeps them
out of every load aggregate (as it does hold cells) and exposes them through
``Model.capacities()``, which calls :func:`fold` here; report/capacity.py lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..core import analysis
from ..core.analysis import Spread

CAPACITY_MODE = "capacity"


def is_capacity(record: dict) -> bool:
    return record.get("mode") == CAPACITY_MODE


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

    @property
    def outcomes(self) -> list[str]:
        return [s.get("outcome", "?") for s in self.searches]

    @property
    def capacity(self) -> Optional[Spread]:
        """Median, min and max over the repeats that found a capacity (None: none did)."""
        return analysis.median_spread([s.get("capacity") for s in self.searches])

    @property
    def lower_bound(self) -> Optional[float]:
        """The highest passing rate of a generator-bound search: the capacity is above it."""
        bounds = [s.get("lower_bound") for s in self.searches if s.get("outcome") != "capacity"]
        bounds = [b for b in bounds if b is not None]
        return max(bounds) if bounds else None

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


def fold(records: list[dict]) -> dict[tuple[str, str], CapacityCell]:
    out: dict[tuple[str, str], CapacityCell] = {}
    for r in records:
        if not is_capacity(r):
            continue
        key = (r.get("target"), r.get("protocol"))
        cell = out.get(key)
        if cell is None:
            cell = out[key] = CapacityCell(
                r.get("target"),
                r.get("protocol"),
                r.get("workload"),
                r.get("connections"),
                "skipped",
            )
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
