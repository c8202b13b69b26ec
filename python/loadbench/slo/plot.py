"""The capacity search as a chart: corrected latency percentiles of every step against the rate
it achieved, the latency objectives as horizontal lines, the capacity (or the generator's
limit) marked - the knee the search found, drawn from its own steps."""

from __future__ import annotations

from pathlib import Path
from typing import Union

from .capacity_result import BOUNDED_OUTCOMES, CapacityResult
from .objectives import parse_objective

PERCENTILES = (("p50", "#1f77b4"), ("p99", "#d62728"), ("p99.9", "#9467bd"))


def plot_capacity(found: CapacityResult, path: Union[str, Path]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = sorted(found.steps, key=lambda s: s.achieved)
    fig, ax = plt.subplots(figsize=(8.5, 5.0))
    for name, colour in PERCENTILES:
        points = [(s.achieved, s.latency_ms()[name]) for s in steps if s.latency_ms()]
        if points:
            ax.plot(*zip(*points), marker="o", color=colour, label=f"{name} (corrected)")
    failed = [(s.achieved, s.latency_ms()["p99"]) for s in steps if not s.passed and s.latency_ms()]
    if failed:
        ax.scatter(*zip(*failed), marker="x", s=80, color="black", zorder=5, label="failing step")
    for text in found.objectives:
        o = parse_objective(text)
        if o.is_latency:
            ax.axhline(o.limit / 1000, linestyle="--", color="#555", linewidth=1)
            ax.annotate(
                f"objective {text}",
                (0.01, o.limit / 1000),
                xycoords=("axes fraction", "data"),
                textcoords="offset points",
                xytext=(0, 3),
                fontsize=8,
                color="#555",
            )
    if found.capacity is not None:
        ax.axvline(found.capacity, color="#2ca02c", linewidth=1.5)
        ax.annotate(
            f"capacity {found.capacity:,.0f} req/s".replace(",", " "),
            (found.capacity, 1.0),
            xycoords=("data", "axes fraction"),
            textcoords="offset points",
            xytext=(4, -14),
            fontsize=9,
            color="#2ca02c",
        )
    elif found.outcome in BOUNDED_OUTCOMES:
        low, high = found.interval or (None, None)
        if low is not None:
            ax.axvline(low, color="#c0392b", linewidth=1.5, linestyle="--")
        bound = (
            f"capacity in [{low:,.0f}, {high:,.0f}] req/s".replace(",", " ")
            if low is not None and high is not None
            else "no capacity figure"
        )
        ax.set_title(f"{found.outcome}: {bound}", fontsize=9, loc="right", color="#c0392b")
    ax.set_yscale("log")
    ax.set_xlabel("achieved rate (req/s)")
    ax.set_ylabel("latency (ms, log scale)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"Capacity search: {found.url}, {' and '.join(found.objectives)}\n"
        f"every step {found.settings['step_s']:g} s after {found.settings['settle_s']:g} s "
        f"settle, windows of {found.settings['window_s']:g} s",
        fontsize=10,
    )
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
