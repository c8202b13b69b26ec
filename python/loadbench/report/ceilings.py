"""The server's CPU ceiling as a whole results folder knows it, per (server, protocol).

core/limits.py gives every run its own ceiling: the server's cores / its CPU time per response
in that run. One run's CPU per response is not the server's least: at a lower load, under
steal, or on a cold process each response costs more (fewer per wake-up), so one run's ceiling
can lie below what the same folder measured elsewhere - vm-3 put beast's capacity "at most
187 068 by CPU" beside a closed-loop cell of 214 348 req/s and an open-loop run at 203 631. A
bound must hold against the folder's own data, so the report reads every ceiling here: the
highest of the runs' ceilings (the least CPU per response measured anywhere - closed-loop and
open-loop cells and every capacity step - for that server and protocol, every workload).

A ceiling still below a throughput the folder measured for the server and protocol (a CPU
reading that proves nothing: the sampler missed part of the tree, or the cores changed; an open
loop counts as measured only where the server kept up, see :func:`_runs`) is dropped: the bound is then open above (None here, "no ceiling" to every reader) rather than
wrong.
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..core.limits import SERVER_BUSY
from .capacity_cells import is_capacity, step_limit
from .rows import pinned_cores

Pair = tuple  # (target, protocol)


def _runs(
    rows: Iterable[dict], capacity_records: Iterable[dict], server_cores: Optional[int]
) -> Iterable[tuple[Pair, Optional[float], Optional[float]]]:
    """(server, protocol), ceiling and measured req/s of every run the folder kept. An open
    loop's req/s is the rate it was asked for (the responses of requests due in the window,
    drained after it): it is a throughput the server gave only where it kept up - a capacity
    step that passed, an open-loop cell whose server had CPU to spare (below SERVER_BUSY) -
    not where it fell behind (hypercorn: 4 968 due in a failing 1 s step, at most ~4 760 served)."""
    for row in rows:
        if row.get("status") == "ok" and row.get("mode") in ("closed", "open"):
            kept_up = row["mode"] == "closed" or (row.get("server_busy") or 0) < SERVER_BUSY
            rps = row.get("rps") if kept_up else None
            yield (row["target"], row["protocol"]), row.get("ceiling_rps"), rps
    for record in capacity_records:
        if not is_capacity(record) or record.get("status") != "ok":
            continue
        cores = pinned_cores(record.get("server"), "cpus") or server_cores
        pair = (record.get("target"), record.get("protocol"))
        yield pair, (record.get("result") or {}).get("ceiling"), None  # the search's own U
        for step in (record.get("result") or {}).get("steps") or []:
            limit = step_limit(step, cores) or {}
            rate = step.get("achieved_rate") if step.get("passed") else None
            yield pair, limit.get("ceiling_rps"), rate


def folder_ceilings(
    rows: Iterable[dict],
    capacity_records: Iterable[dict] = (),
    server_cores: Optional[int] = None,
) -> dict[Pair, Optional[float]]:
    """Per (server, protocol) with a CPU ceiling in any run: the highest of them (the least CPU
    per response measured anywhere in the folder), or None when even that lies below a
    throughput the folder measured for the pair (see the module's note). A pair with no
    ceiling at all is absent (nothing is known to close its bounds)."""
    ceiling: dict[Pair, float] = {}
    measured: dict[Pair, float] = {}
    for pair, c, rps in _runs(rows, capacity_records, server_cores):
        if c:
            ceiling[pair] = max(ceiling.get(pair, 0.0), float(c))
        if rps:
            measured[pair] = max(measured.get(pair, 0.0), float(rps))
    return {p: c if c >= measured.get(p, 0.0) else None for p, c in ceiling.items()}
