"""The sweep's CPU profiles (``profile = true``): after each closed-loop or connection-setup
cell's measured repeats, one more window of the same cell on the same server with `perf record`
on its tree (loadbench.core.profile). perf slows the server (an interrupt and a stack walk per
sample), so, as with allocation sites, that window's speed is never a cell's: its own req/s and
CPU us/req are kept beside the profile in ``profiles.json`` only, and the report reads shares
from it, never a rate. Each cell's files go to ``profiles/<cell>/``: perf.folded, flamegraph.svg
and top.md (perf.data is dropped: folded stacks are the record, and far smaller)."""

from __future__ import annotations

import re
from typing import Optional

from ..core.errors import LoadbenchError
from ..core.run import run
from .plan import Cell, SweepPlan
from .results_folder import PROFILES_DIR, ResultsFolder

PROFILED_MODES = ("closed", "connect")  # an open loop's rate and a search are not one window


def profile_key(cell: Cell) -> str:
    """The cell without its repeat: "beast|http|plaintext|c10" (a profile is per cell)."""
    return cell.id.rsplit("|r", 1)[0]


def folder_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", key.replace("|", "-"))


def wanted(
    sweep: SweepPlan,
    cell: Cell,
    status: str,
    folder: ResultsFolder,
    server_pid: Optional[int],
    local: bool,
) -> bool:
    """Profile after the cell's last repeat, when it measured, on a server this process started
    (``server_pid``) and loaded itself (``local``: a distributed runner's load comes from
    elsewhere, but perf must run beside the server), unless a resumed sweep has its profile."""
    return (
        sweep.profile
        and status == "ok"
        and cell.mode in PROFILED_MODES
        and cell.repeat == sweep.repeats - 1
        and local
        and server_pid is not None
        and profile_key(cell) not in folder.profiles()
    )


def profile_cell(
    cell: Cell, url: str, kwargs: dict, server_pid: int, folder: ResultsFolder
) -> None:
    """One profiled window of ``cell`` (``url`` and the run keywords its repeats used: its own
    warm-up and duration) on the server ``server_pid`` into the folder's profiles.json."""
    key = profile_key(cell)
    relative = f"{PROFILES_DIR}/{folder_name(key)}"
    block: dict = {"connections": cell.load, "mode": cell.mode}
    try:
        result = run(
            url,
            sample_pid=server_pid,
            profile=folder.path / relative,
            profile_keep_data=False,
            **kwargs,
        )
        profile = dict(result.extras.get("profile") or {})
        for name in ("dir", "folded", "svg", "top_table"):
            if profile.get(name):  # relative to the results folder: it can move
                profile[name] = f"{relative}/{profile[name].rsplit('/', 1)[-1]}"
        profile["dir"] = relative if "dir" in profile else None
        server = result.extras.get("server") or {}
        block.update(
            profile,
            profiled_rps=round(result.rps, 3),  # slowed by perf: not the cell's speed
            profiled_cpu_us_per_req=server.get("cpu_us_per_req"),
        )
    except LoadbenchError as exc:
        block["error"] = str(exc)
    folder.add_profile(key, block)
