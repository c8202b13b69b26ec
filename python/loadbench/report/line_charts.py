"""The line charts of a sweep (matplotlib): throughput over concurrency, the open loop's
corrected p99 against achieved req/s, and the capacity searches' steps - panels of one line per
server in its colour, a marker alone where a server has one point (a line through one point
draws a trend the data does not have), a rate axis that turns logarithmic past
:data:`~loadbench.report.bars.LOG_SPREAD`, never wider than the bar charts. charts.py chooses
which to draw; the numbers are the report model's.
"""

from __future__ import annotations

import math

from . import capacity
from .bars import DPI, LOG_SPREAD, MAX_WIDTH_PX, _plt, _wrap, plain_log_axis
from .model import Model
from .protocol_charts import c_scope, concurrencies, protocol_title


def median_of(model: Model) -> str:
    """How a cell's figure was made, for a title: "median of 3 repeats"."""
    n = model.settings.get("repeats") or max((a.repeats for a in model.aggs.values()), default=1)
    return f"median of {n} repeats" if n > 1 else "one run per cell"


def _panels(count: int, width: float, height: float):
    """A figure of ``count`` panels, two to a row, sharing the y axis, with room at the right
    for one legend of the servers; returns (fig, axes)."""
    plt = _plt()
    ncols = min(2, max(1, count))
    nrows = math.ceil(max(1, count) / ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        # never wider than the bar charts (MAX_WIDTH_PX at the PNGs' dpi)
        figsize=(min(width * ncols + 1.8, MAX_WIDTH_PX / DPI), height * nrows + 0.9),
        squeeze=False,
        sharey=True,
    )
    for ax in list(axes.flat)[count:]:
        ax.axis("off")
    return fig, axes


def _finish_panels(fig, handles: dict, title: str) -> None:
    """The servers' legend at the right (one entry per server, in its colour) and the title,
    wrapped to the figure's width."""
    lines = [w for part in title.split("\n") for w in _wrap(part, fig.get_figwidth(), 8)]
    fig.suptitle("\n".join(lines), fontsize=10)
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="center left",
        bbox_to_anchor=(1 - 1.6 / fig.get_figwidth(), 0.5),
        fontsize=8,
    )
    # tight_layout leaves room for the title itself (matplotlib >= 3.3)
    fig.tight_layout(rect=(0, 0, 1 - 1.7 / fig.get_figwidth(), 1))


def _rate_axis(ax) -> None:
    """An x axis of req/s written as the tables write them: from 0, or logarithmic when the
    servers' rates span more than LOG_SPREAD (300 req/s beside 130 000: the slow ones would be
    a smear at 0)."""
    xs = [x for line in ax.get_lines() for x in line.get_xdata() if x and x > 0]
    if xs and max(xs) / min(xs) > LOG_SPREAD:
        plain_log_axis(ax, "x")
        ax.xaxis.set_major_formatter(_thousands_formatter())
        return
    _thousands(ax.xaxis)
    ax.set_xlim(left=0)


def _thousands_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v:,.0f}".replace(",", " ") if v >= 1 else f"{v:g}")


def _line(ax, xs: list, ys: list, color: str, label: str):
    """A server's points joined by a line - a marker alone when there is one point: a line
    through one point would draw a trend the data does not have."""
    (line,) = ax.plot(
        xs, ys, label=label, color=color, marker="o", linestyle="-" if len(xs) > 1 else "none"
    )
    return line


def _thousands(axis) -> None:
    """Tick labels of a req/s axis as the tables write them: 12 345."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}".replace(",", " ")))


def throughput_vs_concurrency(model: Model, colors: dict[str, str], workload: str):
    """Lines over C of ``workload``: one panel per protocol measured at two or more
    concurrencies (same y axis), one line per server in its colour, min-max of repeats as error
    bars, marks for lower bounds (≥), under-driven (‡) and excluded (x) cells."""
    shape = concurrencies(model)
    shown = [p for p in model.protocols if len(shape.get((p, workload), [])) > 1]
    if not shown:
        return None
    levels = sorted({c for p in shown for c in shape[(p, workload)]})
    fig, axes = _panels(len(shown), 6.0, 3.8)
    handles: dict = {}
    top = 0.0
    for ax, protocol in zip(axes.flat, shown):
        for t in model.listed:
            cells = sorted(
                (a for a in model.cells(t, protocol, workload) if a.status == "ok" and a.rps),
                key=lambda a: a.load,
            )
            if not cells:
                continue
            xs = [a.connections for a in cells]
            ys = [a.rps.median for a in cells]
            err = [
                [a.rps.median - a.rps.min for a in cells],
                [a.rps.max - a.rps.median for a in cells],
            ]
            ax.errorbar(xs, ys, yerr=err, color=colors[t], linestyle="none", capsize=3)
            handles.setdefault(t, _line(ax, xs, ys, colors[t], t))
            bound = [(x, y) for x, y, a in zip(xs, ys, cells) if a.bound_for("rps")]
            if bound:  # a lower bound: the server's value is above the point
                ax.plot(
                    [x for x, _ in bound],
                    [y for _, y in bound],
                    linestyle="none",
                    marker="^",
                    markersize=10,
                    markerfacecolor="white",
                    markeredgecolor=colors[t],
                )
            top = max([top] + [a.rps.max for a in cells])
            for x, y, a in zip(xs, ys, cells):
                marks = (
                    ("‡" if a.starved else "")
                    + ("≥" if a.bound_for("rps") else "")
                    + ("" if a.ranked else "x")
                )
                if marks:
                    ax.annotate(
                        marks, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=9
                    )
        cs = shape[(protocol, workload)]
        ax.set_xscale("log")
        ax.set_xticks(cs)
        ax.set_xticklabels([str(c) for c in cs])
        ax.minorticks_off()
        ax.set_title(protocol_title(model, protocol), fontsize=10)
        ax.set_xlabel("Concurrency C (connections, log scale)")
        ax.set_ylabel("Throughput (req/s)")
        _thousands(ax.yaxis)
        ax.grid(alpha=0.3)
    for ax in axes.flat:  # shared y: set once all panels are drawn, or a later panel is cut off
        ax.set_ylim(0, max(top, 1.0) * 1.08)
    _finish_panels(
        fig,
        handles,
        f"Throughput vs concurrency ({c_scope(levels)}), {workload}, closed loop, keep-alive, "
        f"{median_of(model)}\n"
        "error bars: min-max of repeats; x = excluded; ‡ = under-driven; open triangle ≥ = a "
        "lower bound (the generator was the limit)",
    )
    return fig


def capacity_latency(model: Model, colors: dict[str, str]):
    """The capacity searches' steps as each server's knee: one panel per protocol, one line per
    server in its colour through the steps that passed (corrected p99 against the rate each
    achieved, sorted by rate), the failed steps faint crosses beside it, the p99 objective as a
    dashed line and each server's confirmed capacity as a filled marker. (One line through every
    step, failed ones included, drew a vertical scribble: go alone had 57 steps, p99 2-437 ms.)"""
    series = capacity.chart_steps(model)
    if not series:
        return None
    objectives = capacity.objectives_of(model)
    limit = capacity.latency_limit_ms(objectives)
    found = model.capacities()
    fig, axes = _panels(len(series), 6.5, 4.2)
    handles: dict = {}
    for ax, (protocol, per_server) in zip(axes.flat, series.items()):
        for t in model.listed:
            if t not in per_server:
                continue
            passed = [(x, y) for x, y, ok in per_server[t] if ok]
            failed = [(x, y) for x, y, ok in per_server[t] if not ok]
            if passed:  # sorted by rate: the knee, never the run order
                xs, ys = zip(*passed)
                handles.setdefault(t, _line(ax, list(xs), list(ys), colors[t], t))
            if failed:
                fx, fy = zip(*failed)
                ax.plot(fx, fy, "x", color=colors[t], alpha=0.3, markersize=5, linestyle="none")
            _knee(
                ax, found[(t, protocol)], passed or [(x, y) for x, y, _ in per_server[t]], colors[t]
            )
        if limit is not None:
            ax.axhline(limit, color="#555", linestyle="--", linewidth=1)
        plain_log_axis(ax)
        _rate_axis(ax)
        ax.set_title(protocol_title(model, protocol), fontsize=10)
        ax.set_xlabel("Achieved rate of the step (req/s)")
        ax.set_ylabel("p99 latency, corrected (ms, log scale)")
        ax.grid(alpha=0.3, which="both")
    cell = next(iter(found.values()))
    _finish_panels(
        fig,
        handles,
        f"Capacity search under {' and '.join(objectives)}: the passing steps' corrected p99 vs "
        f"their achieved rate (the knee), {cell.workload}, C = {cell.connections} and up\n"
        "(faint x: a failed step; dashed grey: the objective; star: the capacity found, the median "
        "of the searches with their min-max; triangle: a lower bound the generator set, dashed to "
        "the server's CPU ceiling)",
    )
    return fig


def _knee(ax, cell, points: list[tuple[float, float]], color: str) -> None:
    """The searched knee on a server's curve: a star at its capacity (the median of the
    searches, their range as a whisker), or - when the generator was the limit - a triangle at
    the lower bound dashed out to the server's CPU ceiling."""
    figure = cell.figure
    if figure is None:
        return
    x = float(figure)
    y = min(points, key=lambda p: abs(p[0] - x))[1]  # the step nearest the knee
    if figure.bound is None:
        spread = figure.spread
        xerr = [[x - spread[0]], [spread[1] - x]] if spread and spread[1] > spread[0] else None
        ax.errorbar(
            x, y, xerr=xerr, fmt="*", color=color, markersize=13, markeredgecolor="#222", capsize=3
        )
        return
    ax.plot([x], [y], ">", color=color, markersize=10, markeredgecolor="#222")
    if figure.ceiling:
        ax.plot([x, figure.ceiling], [y, y], "--", color=color, linewidth=1)
        ax.plot([figure.ceiling], [y], "|", color=color, markersize=12)


def latency_vs_throughput(model: Model, colors: dict[str, str]):
    """Open loop: one panel per protocol (and workload, should several have run open), one line
    per server in its colour: corrected p99 (log axis) against achieved req/s, each point
    labelled with its offered rate as a percent of the server's capacity."""
    measured = [
        a for a in model.cells(mode="open") if a.status == "ok" and a.rps and a.p99_ms is not None
    ]
    shown = [
        (p, w)
        for p in model.protocols
        for w in model.workloads
        if any(a.protocol == p and a.workload == w for a in measured)
    ]
    if not shown:
        return None
    workloads = list(dict.fromkeys(w for _, w in shown))
    fig, axes = _panels(len(shown), 6.5, 4.2)
    handles: dict = {}
    for ax, (protocol, workload) in zip(axes.flat, shown):
        for t in model.listed:
            cells = sorted(
                (
                    a
                    for a in measured
                    if (a.target, a.protocol, a.workload) == (t, protocol, workload)
                ),
                key=lambda a: a.load,
            )
            if not cells:
                continue
            xs, ys = [a.rps.median for a in cells], [a.p99_ms.median for a in cells]
            handles.setdefault(t, _line(ax, xs, ys, colors[t], t))
            for x, y, a in zip(xs, ys, cells):
                ax.annotate(
                    f"{a.load_pct}%" + ("" if a.ranked else " x"),
                    (x, y),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=7,
                    color=colors[t],
                )
        plain_log_axis(ax)
        _rate_axis(ax)
        ax.set_title(
            protocol_title(model, protocol) + (f", {workload}" if len(workloads) > 1 else ""),
            fontsize=10,
        )
        ax.set_xlabel("Achieved throughput (req/s)")
        ax.set_ylabel("p99 latency, corrected (ms, log scale)")
        ax.grid(alpha=0.3, which="both")
    _finish_panels(
        fig,
        handles,
        f"Open loop, {', '.join(workloads)}: corrected p99 latency vs achieved throughput, "
        f"{median_of(model)}\n(latency from each request's intended send time: coordinated "
        "omission corrected)\npoint labels: offered rate as % of the server's closed-loop "
        "capacity; x = excluded",
    )
    return fig
