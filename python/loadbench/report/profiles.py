"""report.md's "Where the CPU goes" section (a sweep with profile = true): per server, the top
functions of its best cell's CPU profile (sweep/profiles.py) and a link to its flame graph.
The shares come from the profiled window, a separate one after the cell's measured repeats;
the CPU us per request is each share of the cell's own median CPU us/req (the measured,
unprofiled figure), so a row says how much of the figure in the tables above a function is."""

from __future__ import annotations

from typing import Optional

from .cells import Aggregate
from .markdown import table
from .model import Model

SHOWN = 10


def section(model: Model) -> list[str]:
    """The section's lines (empty when the sweep profiled nothing)."""
    if not model.profiles():
        return []
    lines = [
        "## Where the CPU goes",
        "",
        (
            "After each closed-loop cell's measured repeats, the cell ran once more with `perf record` "
            "sampling every process of the server's tree during that window only (not its warm-up). perf "
            "interrupts the server at each sample, so that window's speed is reported nowhere. Per server, "
            f"its best cell (highest median req/s): the top {SHOWN} functions by self share (samples whose "
            "innermost frame is the function), their inclusive share (the function anywhere on the stack) "
            "and the CPU us per request each self share is of the cell's median CPU us/req. `[unknown]` is "
            "code perf could not name (a stripped binary, JIT code). The flame graph shows the whole "
            "profile; every profiled cell's files are in profiles/."
        ),
        "",
    ]
    for target in model.listed:
        cell, ranked = _best_cell(model, target)
        head = f"**{target}**"
        if cell is None:
            continue
        where = f"{cell.protocol}, {cell.workload}, C = {cell.load}" + (
            "" if ranked else "; no cell of it is ranked: its highest median req/s"
        )
        profile = model.profile_of(cell)
        if profile is None:
            lines += [f"{head} ({where}): this cell was not profiled", ""]
            continue
        if profile.get("error"):
            lines += [f"{head} ({where}): no profile - {profile['error']}", ""]
            continue
        cpu = cell.cpu_us.median if cell.cpu_us else None
        lines += [
            f"{head} ({where}): {profile['samples']:,} samples at {profile['frequency_hz']} Hz, "
            f"call graph {profile['call_graph']}; [flame graph]({profile['svg']}), "
            f"[folded stacks]({profile['folded']})",
            "",
            table(
                ["#", "Function", "Module", "self", "inclusive", "CPU us/req (self)"],
                [
                    [
                        str(i),
                        f"`{t['function'][:90]}`",
                        t["module"],
                        f"{100 * t['self_share']:.1f} %",
                        f"{100 * t['inclusive_share']:.1f} %",
                        _us(t["self_share"], cpu),
                    ]
                    for i, t in enumerate(profile.get("top", [])[:SHOWN], 1)
                ],
            ),
            "",
        ]
        if profile.get("event_note"):
            lines += [f"Sampled event: {profile['event_note']}.", ""]
        if profile.get("hint"):
            modules = ", ".join(profile.get("unknown_modules") or [])
            lines += [
                f"{100 * profile['unknown_share']:.0f} % of its samples have no symbol"
                f"{f' (in {modules})' if modules else ''}: {profile['hint']}.",
                "",
            ]
    return lines


def _best_cell(model: Model, target: str) -> tuple[Optional[Aggregate], bool]:
    """(the server's best cell, whether it is ranked): its peak cell, else - no cell ranked
    (generator-bound, contended, errors) - the profiled closed-loop cell with the highest
    median req/s, so a profile is still shown, said as such."""
    peak = model.peak_cell(target)
    if peak is not None:
        return peak, True
    profiled = [a for a in model.cells(target) if a.rps and model.profile_of(a) is not None]
    return max(profiled, key=lambda a: a.rps.median, default=None), False


def _us(share: float, cpu_us: Optional[float]) -> str:
    return "n/a" if cpu_us is None else f"{share * cpu_us:.3f}"
