"""What a server did over the sweep that its figures carry with them: memory that grew inside
one server process (⇡) and reconnects it forced on the generator (↻, judged per cell in
report/cells.py). Both are marked and said in the notes; neither is left out of a ranking.

Memory growth: a sweep runs several cells on one server process, so the peak RSS of its later
cells is what the earlier ones left behind, not what the server needs. vm-3 reported
pypy-hypercorn's peak RSS of 1 630 MiB as its footprint while one of its processes grew from
1 032 MiB at its first cell to 1 556 MiB at its last. :func:`rss_growth` finds, per server, the
process whose RSS climbed (:func:`_growing`) the most from its first cell to its last (in the
order the cells ran); for such a server the memory figure is that process's RSS at its first
cell (:meth:`Model.rss`) and the growth is said beside it as first -> last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# RSS rising by more than this share from a process's first cell to its last is growth, not a
# footprint (allocator noise between cells of one process stays within a few percent).
RSS_GROWTH = 0.2
# ... and rising from one cell (repeat) to the next in at least this share of the steps
RISING_STEPS = 0.75
# a step counts as rising above this share (a few kiB of allocator noise does not)
RISING_STEP = 0.01


@dataclass(frozen=True)
class Growth:
    """One server process's RSS (MiB) at its first cell and at its last, over ``cells`` cells
    (``protocol``: the protocol that process served)."""

    first_mib: float
    last_mib: float
    cells: int
    protocol: str

    @property
    def share(self) -> float:
        return self.last_mib / self.first_mib - 1.0


def _processes(rows: Iterable[dict]) -> dict[tuple, list[dict]]:
    """The measured rows with a peak RSS per (server, process id), in the order they ran."""
    out: dict[tuple, list[dict]] = {}
    for row in rows:
        pid = row.get("server_pid")
        if row.get("status") == "ok" and pid and row.get("rss_peak_mib") is not None:
            out.setdefault((row["target"], pid), []).append(row)
    return out


def _growing(rss: list[float]) -> bool:
    """RSS that climbed: up by more than RSS_GROWTH from the first cell to the last, and up (by
    more than RISING_STEP) at most steps between them (RISING_STEPS) - a leak or a heap that never settles, not the step
    a heavier workload takes (go's h2 process: 17.7 MiB flat, 22.4 once echo ran)."""
    steps = list(zip(rss, rss[1:]))
    rising = sum(1 for a, b in steps if b > a * (1 + RISING_STEP))
    return (
        bool(steps)
        and rss[0] > 0
        and rss[-1] > rss[0] * (1 + RSS_GROWTH)
        and rising >= RISING_STEPS * len(steps)
    )


def rss_growth(rows: Iterable[dict]) -> dict[str, Growth]:
    """Per server whose RSS grew inside one process (:func:`_growing`): the process that grew
    the most, its first and last cell. Rows in results order (the order they ran)."""
    out: dict[str, Growth] = {}
    for (target, _), run in _processes(rows).items():
        rss = [float(r["rss_peak_mib"]) for r in run]
        if not _growing(rss):
            continue
        growth = Growth(rss[0], rss[-1], len(run), run[0].get("protocol") or "")
        if target not in out or growth.share > out[target].share:
            out[target] = growth
    return out


def growth_notes(growth: dict[str, Growth]) -> list[str]:
    """report.md's note on memory that grew within a process (empty when none did)."""
    if not growth:
        return []
    items = ", ".join(
        f"{t} {g.first_mib:.1f} -> {g.last_mib:.1f} MiB over {g.cells} cells of one {g.protocol} "
        "process"
        for t, g in growth.items()
    )
    return [
        f"- **Memory growing within one process ({len(growth)}, marked ⇡):** {items}. The peak "
        "RSS of the later cells is what the earlier ones left, not what the server needs: its "
        "memory figure is that process's RSS at its first cell, the growth beside it."
    ]


def _int(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def reconnect_notes(aggs: Iterable) -> list[str]:
    """report.md's note on the cells marked ↻ (cells.RECONNECT_SHARE), empty when none is."""
    cells = sorted(
        f"{a.target} {a.protocol} {a.workload} "
        + (f"open loop {a.load} %" if a.mode == "open" else f"C = {a.load}")
        + f" ({_int(a.reconnects)} reconnects in {_int(a.responses)} responses, one per "
        f"{a.responses / a.reconnects:.1f})"
        for a in aggs
        if a.status == "ok" and a.reconnecting
    )
    if not cells:
        return []
    return [
        f"- **Reconnecting cells ({len(cells)}, marked ↻):** {'; '.join(cells)}. The server "
        "closed kept-alive connections, so those requests paid a new connection: their latency "
        "includes connection setup and the in-flight count (req/s x mean latency) can read "
        "above C."
    ]
