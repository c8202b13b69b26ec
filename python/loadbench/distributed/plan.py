"""How one run splits into shards: pure arithmetic, no Dask.

Every count splits exactly (the shards' parts add up to the whole, none differs from another by
more than one), the open-loop rate splits evenly, and each shard gets its own Poisson seed so
the shards' arrivals are independent streams, not copies of one. A load shape splits the same
way at every point: a rate schedule (or steps) into the same curve at 1/N of the rate, a
connections schedule into exact parts of each point's count - so the shards, started at one
instant, add up to the whole shape stage by stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..core.errors import ConfigError
from ..core.options import RunOptions


def split_exact(total: int, parts: int) -> list[int]:
    """`total` as `parts` integers that add up to it, the larger ones first."""
    if parts < 1:
        raise ConfigError(f"cannot split into {parts} parts")
    base, extra = divmod(int(total), parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


@dataclass
class Shard:
    """One shard's part of the run: `run_kwargs` go to loadbench.run.start() on a worker."""

    index: int
    run_kwargs: dict[str, Any] = field(default_factory=dict)
    # Offset of this shard's start after the common instant: constant-rate shards start
    # index / total_rate apart, so their schedules interleave into one even stream.
    start_offset_s: float = 0.0


def plan_shards(shards: int, run_kwargs: dict[str, Any]) -> list[Shard]:
    """Split the keyword arguments of one run into `shards` parts."""
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise ConfigError(f"shards must be an integer >= 1, not {shards!r}")
    options = RunOptions(**run_kwargs)  # the run as it reads its keywords (a schedule's count)
    connections = int(options.connections)
    if connections < shards:
        raise ConfigError(
            f"{shards} shards need at least {shards} connections (one each), not {connections}"
        )
    threads = int(run_kwargs.get("threads", 1))
    conn_parts = split_exact(connections, shards)
    requests: Optional[int] = run_kwargs.get("requests")
    req_parts = split_exact(requests, shards) if requests is not None else [None] * shards
    if requests is not None and requests < shards:
        raise ConfigError(
            f"{shards} shards need at least {shards} requests (one each), not {requests}"
        )
    shape = options.schedule_points
    # the rate the shards' sends interleave at from the start (None: a closed loop)
    rate: Optional[float] = shape[0][1] if shape is not None else options.rate
    max_conn: Optional[int] = run_kwargs.get("max_connections")
    max_parts = split_exact(max_conn, shards) if max_conn is not None else [None] * shards
    seed = int(run_kwargs.get("seed", 1))
    out = []
    for i in range(shards):
        kw = dict(run_kwargs)
        kw["connections"] = conn_parts[i]
        kw["threads"] = max(1, min(threads, conn_parts[i]))
        if requests is not None:
            kw["requests"] = req_parts[i]
        if shape is not None:
            kw.pop("steps", None)  # steps are a rate schedule of flat stages: one form for all
            kw["rate_schedule"] = [(t, r / shards) for t, r in shape]
        elif rate is not None:
            kw["rate"] = float(rate) / shards
        if rate is not None:
            kw["seed"] = seed + i  # independent Poisson streams, reproducible from the one seed
            if max_conn is not None:
                kw["max_connections"] = max(max_parts[i], conn_parts[i])
        if options.connections_schedule is not None:
            kw["connections_schedule"] = [
                (t, split_exact(int(n), shards)[i]) for t, n in options.connections_schedule
            ]
            kw.pop("connections", None)  # the shard's schedule sets its count
        offset = 0.0
        if rate and run_kwargs.get("arrival", "constant") == "constant":
            offset = i / float(rate)
        out.append(Shard(index=i, run_kwargs=kw, start_offset_s=offset))
    return out
