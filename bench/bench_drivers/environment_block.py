"""The environment block every bench report opens with: the machine facts a reader needs to
weigh the numbers (loadbench.core.environment's probe), and the load at start read with the
gate's verdict."""

from __future__ import annotations

import os
import time
from typing import Optional

from loadbench.core.environment import environment as probe_environment


def environment() -> dict[str, str]:
    """The machine facts a reader needs to weigh the numbers (loadbench's own environment probe)."""
    env = probe_environment()
    load1, load5, load15 = env.loadavg_at_start
    return {
        "Date (UTC)": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "Host": env.host,
        "Kernel": env.kernel,
        "CPU": f"{env.cpu_model} ({env.logical_cores} logical cores)",
        "Memory": f"{env.memory_kib} KiB",
        "Python": env.python,
        "loadbench": f"{env.loadbench} ({env.compiler}, Boost {env.boost}, {env.openssl})",
        "Commit": env.git_commit or "unknown",
        "Load average at start": f"{load1:.2f} / {load5:.2f} / {load15:.2f} (1 / 5 / 15 min)",
    }


def machine_note(load1: float, gate: Optional[dict] = None) -> str:
    """The load average at start, read with the gate's verdict: the 1-min average trails for a
    minute after earlier work ended, so a high figure with a gate that measured other processes
    quiet is that trail, not work running beside the measurement."""
    cores = os.cpu_count() or 1
    if load1 < 0.25 * cores:
        return f"quiet (load {load1:.2f} on {cores} cores)"
    if gate and not gate.get("skipped") and not gate.get("timed_out") and gate.get("quiet", True):
        return (
            f"load {load1:.2f} on {cores} cores at start is the 1-min average trailing earlier work: the "
            "gate measured other processes below its threshold before the run (see Load gate, and the "
            "outside-CPU figures per run)"
        )
    return (
        f"SHARED: load {load1:.2f} on {cores} cores at start - other work was running on the "
        "machine, so absolute numbers carry that noise; the ranking within one repeat is fairer "
        "than across repeats"
    )
