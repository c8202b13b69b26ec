"""Memory per idle connection from a sweep's hold cells (mode "hold": N idle keep-alive
connections held by :func:`loadbench.hold_connections`, no load), folded per server.

Hold records carry no req/s, latency or CPU per request, so :mod:`loadbench.model` keeps them
out of every load aggregate and exposes them through ``Model.memory_per_connection()``, which
calls :func:`fold` here. The median is :func:`loadbench.analysis.median`, the one of the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..core import analysis

HOLD_MODE = "hold"


def is_hold(record: dict) -> bool:
    return record.get("mode") == HOLD_MODE


@dataclass
class IdleMemory:
    """One server's hold cells folded: medians over the repeats that held and answered every
    asked connection (status "ok"); when none did, ``held`` and ``answered`` are the medians of
    the failed repeats that got as far as measuring, and the per-connection figures stay None."""

    target: str
    connections: int  # asked per repeat
    status: str  # "ok" (at least one repeat held and answered all), "fail", "skipped"
    repeats: int = 0
    failed: int = 0
    note: Optional[str] = None  # the first failed repeat's reason, or why the cells were skipped
    held: Optional[float] = None
    answered: Optional[float] = None  # 2xx answers to the one request sent on each held connection
    rss_bytes_per_connection: Optional[float] = None
    pss_bytes_per_connection: Optional[float] = None
    generator_bytes_per_connection: Optional[float] = None
    workload: Optional[str] = None


def _figure(record: dict, *keys: str) -> Any:
    value: Any = record.get("result") or {}
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _median(records: list[dict], *keys: str) -> Optional[float]:
    return analysis.median([_figure(r, *keys) for r in records])


def fold(records: list[dict]) -> dict[str, IdleMemory]:
    """Per server (in the order the records name them), its hold cells folded (see IdleMemory)."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        if is_hold(r):
            groups.setdefault(r["target"], []).append(r)
    out = {}
    for target, group in groups.items():
        ok = [r for r in group if r.get("status") == "ok"]
        failed = [r for r in group if r.get("status") == "fail"]
        status = "ok" if ok else ("fail" if failed else "skipped")
        note = next((r.get("error") for r in failed + group if r.get("error")), None)
        cell = IdleMemory(
            target,
            int(group[0].get("connections") or 0),
            status,
            repeats=len(group),
            failed=len(failed),
            note=note,
            workload=group[0].get("workload"),
        )
        # what the failed repeats held and answered still says how far they got
        counted = ok or [r for r in failed if r.get("result")]
        cell.held, cell.answered = (
            _median(counted, "connections_held"),
            _median(counted, "requests_ok"),
        )
        if ok:
            cell.rss_bytes_per_connection = _median(ok, "server", "rss_bytes_per_connection")
            cell.pss_bytes_per_connection = _median(ok, "server", "pss_bytes_per_connection")
            cell.generator_bytes_per_connection = _median(ok, "generator", "bytes_per_connection")
        out[target] = cell
    return out
