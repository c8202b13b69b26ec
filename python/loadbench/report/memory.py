"""report.md's "Memory per idle connection" section: what each server's tree grew by per idle
keep-alive connection in the sweep's hold cells. Every number is
:meth:`loadbench.model.Model.memory_per_connection`; this module only lays it out."""

from __future__ import annotations

from typing import Callable, Optional

from ..core import analysis
from .idle_memory import IdleMemory
from .markdown import fmt_int, table
from .model import Model


def _bytes(value: Optional[float]) -> str:
    return "n/a" if value is None else fmt_int(value)


def heading(model: Model) -> Optional[str]:
    """'Memory per idle connection (10 000 held)', or None when the sweep had no hold cells."""
    cells = model.memory_per_connection()
    if not cells:
        return None
    asked = sorted({c.connections for c in cells.values()})
    return f"Memory per idle connection ({' / '.join(fmt_int(n) for n in asked)} held)"


def _lowest(
    cells: dict[str, IdleMemory], get: Callable[[IdleMemory], Optional[float]]
) -> Optional[str]:
    """The bold server of a column: the lowest among servers whose hold cells held and answered
    every connection (status ok); a single server is nobody's winner, as in the load tables."""
    values = {t: get(c) for t, c in cells.items() if c.status == "ok"}
    if sum(v is not None for v in values.values()) < 2:
        return None
    return analysis.best_of(values, higher_is_better=False)


def section(model: Model) -> list[str]:
    """The section's lines (empty without hold cells)."""
    title = heading(model)
    if title is None:
        return []
    cells = model.memory_per_connection()
    repeats = max(c.repeats for c in cells.values())
    workload = next((c.workload for c in cells.values() if c.workload), "plaintext")
    getters = {
        "rss": lambda c: c.rss_bytes_per_connection,
        "pss": lambda c: c.pss_bytes_per_connection,
        "generator": lambda c: c.generator_bytes_per_connection,
    }
    # the generator is the same loadbench in every row: its column has no winner
    best = {name: _lowest(cells, get) for name, get in getters.items() if name != "generator"}
    rows, notes = [], []
    for t, c in cells.items():
        if c.status != "ok":
            what = "FAIL" if c.status == "fail" else "n/a"
            rows.append([t, _bytes(c.held), _bytes(c.answered), what, what, what])
            notes.append(f"{t}: {c.note or 'not measured'}")
            continue
        values = []
        for name, get in getters.items():
            text = _bytes(get(c))
            values.append(
                (f"**{text}**" if best.get(name) == t else text) + (" †" if c.failed else "")
            )
        if c.failed:
            notes.append(
                f"{t}: {c.failed} of {c.repeats} repeats fell short ({c.note}); † = the median of the others"
            )
        rows.append([t, _bytes(c.held), _bytes(c.answered)] + values)
    lines = [
        f"## {title}",
        "",
        (
            "Each server held that many idle keep-alive connections (`loadbench.hold_connections`), on a "
            "freshly started server per repeat, with no load. Its process tree's RSS and PSS (shared pages "
            "counted once) grew by the figure shown per held connection, measured once the server held a "
            f"descriptor for each; then one GET of the {workload} workload on each connection proved it live "
            f"(answered = 2xx answers). Median of {repeats} repeat(s); the lowest per column in bold among "
            "servers that held and answered every connection. Generator B/conn is loadbench's own growth "
            "(page-granular: 0 when the holder's fd and state byte per connection fit pages it had). "
            "Over plain http only: the holder speaks cleartext HTTP/1.1, so https, h2c and h2 have no hold "
            "cells. These cells are not in any req/s, latency or CPU figure above or below."
        ),
        "",
        table(
            ["Server", "Held", "Answered 2xx", "RSS B/conn", "PSS B/conn", "Generator B/conn"], rows
        ),
    ]
    if notes:
        lines += ["", "Not measured or short of the asked connections: " + "; ".join(notes) + "."]
    return lines + [""]
