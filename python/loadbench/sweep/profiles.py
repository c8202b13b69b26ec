"""The sweep's CPU profiles (``profile = true``): after each closed-loop or connection-setup
cell's measured repeats, one more window of the same cell on the same server with `perf record`
on its tree (loadbench.core.profile). perf slows the server (an interrupt and a stack walk per
sample), so, as with allocation sites, that window's speed is never a cell's: its own req/s and
CPU us/req are kept beside the profile in ``profiles.json`` only, and the report reads shares
from it, never a rate. Each cell's files go to ``profiles/<cell>/``: perf.folded, flamegraph.svg
and top.md (perf.data is dropped: folded stacks are the record, and far smaller)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..core.errors import LoadbenchError
from ..core.run import run
from .plan import Cell
from .results_folder import PROFILES_DIR

if TYPE_CHECKING:
    from .group import ServerGroup

PROFILED_MODES = ("closed", "connect")  # an open loop's rate and a search are not one window


def profile_key(cell: Cell) -> str:
    """The cell without its repeat: "beast|http|plaintext|c10" (a profile is per cell)."""
    return cell.id.rsplit("|r", 1)[0]


def folder_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", key.replace("|", "-"))


def wanted(group: "ServerGroup", cell: Cell, status: str) -> bool:
    """Profile after the cell's last repeat, when it measured, on a server this process started
    (a distributed runner's load comes from elsewhere, but perf must run beside the server)."""
    return (
        group.sweep.profile
        and status == "ok"
        and cell.mode in PROFILED_MODES
        and cell.repeat == group.sweep.repeats - 1
        and group.runner is run
        and group.server is not None
        and group.server.pid is not None
        and profile_key(cell) not in group.folder.profiles()
    )


def profile_cell(group: "ServerGroup", cell: Cell) -> None:
    """One profiled window of ``cell`` (its own warm-up and duration) into profiles.json."""
    assert group.server is not None and group.server.pid is not None
    key = profile_key(cell)
    relative = f"{PROFILES_DIR}/{folder_name(key)}"
    url, kwargs = group._run_kwargs(cell)
    block: dict = {"connections": cell.load, "mode": cell.mode}
    try:
        result = run(
            url,
            sample_pid=group.server.pid,
            profile=group.folder.path / relative,
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
    group.folder.add_profile(key, block)
