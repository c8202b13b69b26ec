"""PNG charts of a sweep (matplotlib, Agg backend): in the spirit of seed report 001.

Every chart has a title that says what it holds fixed (protocol, workload, concurrency C, how
many repeats a figure is the median of), axis labels with units and a legend; bar charts print
their values on the bars, and a server that was not measured shows "n/a" / "FAIL" where its bar
would be. A bar or line per server is in that server's colour (bars.server_colors), the same in
every chart. All figures come from the same report model as report.md (loadbench.model): peaks
and averages over ranked cells only (a cell with > 1 % non-2xx/errors or a contended one shows
"excluded: why" where its bar would be). A figure that is a bound (a generator-bound cell
entered it) is drawn as a hatched, outlined bar labelled "≥ N" (or "≤ N"): the server's value
is at least (at most) the bar, never exactly it.

The charts follow the data's shape: a sweep that measured each (protocol, workload) at one
concurrency gets bars at that C (throughput_at_c25.png), one with several gets lines over C
(throughput_vs_concurrency.png) - a line chart of one C is a column of dots.

    loadbench.report.charts.write_charts("reports/2026-11-29-host")  # -> [Path(...png), ...]
    dict(chart_figures(model))["throughput_at_c25.png"]             # the Figure, unsaved
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator, Optional

from . import capacity
from .bars import (
    DPI,
    LOG_SPREAD,
    MAX_WIDTH_PX,
    NEUTRAL,
    HPanel,
    _plt,
    _wrap,
    grouped_figure,
    hbar_figure,
    panel_figure,
    plain_log_axis,
    save_figure,
    server_colors,
    sort_panel,
)
from .model import Aggregate, Model
from .model import load as load_model
from .protocol_charts import c_scope, concurrencies, protocol_figures, protocol_title

# Every PNG write_charts may write. One it did not write this time is an old chart of data the
# folder no longer holds (throughput_vs_concurrency.png of a sweep re-run at one C): removed.
CHART_FILES = (
    "throughput_*.png",
    "protocol_*.png",
    "workloads*.png",
    "latency*.png",
    "memory_peak_rss.png",
    "connection_setup.png",
    "capacity_latency.png",
    "variant_*_vs_*.png",
)


def _status(agg: Optional[Aggregate], metric: str = "rps") -> str:
    """What a chart prints where this cell's bar would be."""
    if agg is None or agg.status == "skipped":
        return "n/a"
    if agg.status == "fail":
        return "FAIL"
    if not agg.ranked_for(metric):
        return "excluded: " + ", ".join(agg.exclusion_words(metric))
    return "under-driven" if agg.starved else "n/a"


def _median_of(model: Model) -> str:
    """How a cell's figure was made, for a title: "median of 3 repeats"."""
    n = model.settings.get("repeats") or max((a.repeats for a in model.aggs.values()), default=1)
    return f"median of {n} repeats" if n > 1 else "one run per cell"


def write_charts(source) -> list[Path]:
    """Write every chart that the model (or results folder) can support; returns their paths."""
    model = source if isinstance(source, Model) else load_model(source)
    if model.directory is None:
        raise ValueError("write_charts needs a model loaded from a folder (where the PNGs go)")
    written = []
    for name, fig in chart_figures(model):
        path = save_figure(fig, model.directory / name)
        if path is not None:
            written.append(path)
    for pattern in CHART_FILES:
        for old in model.directory.glob(pattern):
            if old not in written:
                old.unlink()
    return written


def chart_figures(model: Model) -> Iterator[tuple[str, object]]:
    """(file name, matplotlib Figure or None) of every chart the model can support, drawn one at
    a time, so a caller can save and close each before the next is drawn. None: the chart has
    no value at all, and no file of that name should stay."""
    aggs, targets, protocols = model.aggs, model.listed, model.protocols
    workloads = [w for w in model.workloads if any(k[2] == w for k in aggs)]
    if not any(a.status == "ok" for a in aggs.values()):
        return  # nothing measured: no chart of empty bars

    shape = concurrencies(model)
    scope = c_scope(sorted({c for cs in shape.values() for c in cs}))
    one_concurrency = bool(shape) and all(len(cs) == 1 for cs in shape.values())
    colors = server_colors(targets)
    by_server = [colors[t] for t in targets]
    gaps = [model.gap(model.cells(t)) for t in targets]
    for kind, get, what in (
        ("peak", model.peak, "best ranked closed-loop cell of each server"),
        ("average", model.average, "mean over each server's ranked closed-loop cells"),
    ):
        # like with like: a panel per protocol, its servers ranked top to bottom
        yield (
            f"throughput_{kind}.png",
            hbar_figure(
                f"{kind.capitalize()} throughput per protocol: {what} (every workload, {scope}, "
                f"{_median_of(model)})",
                "Throughput (req/s)",
                [
                    sort_panel(
                        HPanel(
                            protocol_title(model, p),
                            targets,
                            {kind: [get(t, p) for t in targets]},
                            [model.gap(model.cells(t, p)) for t in targets],
                            by_server,
                        )
                    )
                    for p in protocols
                ],
            ),
        )
    if "http" in protocols and "https" in protocols:
        series = {f"{p} peak": [model.peak(t, p) for t in targets] for p in ("http", "https")}
        for p in (
            "http",
            "https",
        ):  # averages over the ranked cells of p that every server with p has
            series[f"{p} average"] = [model.average(t, p) for t in targets]
        missing = {
            f"{p} {kind}": [model.gap(model.cells(t, p)) for t in targets]
            for p in ("http", "https")
            for kind in ("peak", "average")
        }
        yield (
            "protocol_http_vs_https.png",
            grouped_figure(
                f"HTTP vs HTTPS throughput, closed loop, keep-alive: peak and average over every "
                f"workload ({scope})",
                "Throughput (req/s)",
                targets,
                series,
                missing,
                colors=[NEUTRAL[0], NEUTRAL[1], NEUTRAL[3], NEUTRAL[2]],
            ),
        )
    if len(workloads) > 1:
        series = {w: [model.peak(t, workload=w) for t in targets] for w in workloads}
        missing = {w: [model.gap(model.cells(t, workload=w)) for t in targets] for w in workloads}
        yield (
            "workloads.png",
            grouped_figure(
                f"Workload breakdown: peak throughput per workload (best ranked closed-loop cell "
                f"over every protocol, {scope})",
                "Throughput (req/s)",
                targets,
                series,
                missing,
                colors=NEUTRAL,
            ),
        )
    ref = _latency_reference(
        aggs, targets, protocols[0] if protocols else "http", workloads[0] if workloads else ""
    )
    if ref is not None:
        protocol, workload, c = ref
        cells = [aggs.get((t, protocol, workload, "closed", c)) for t in targets]
        usable = [
            a if a is not None and a.ranked_for("p99_ms") and not a.starved else None for a in cells
        ]
        series = {
            "p50": [a.figure("p50_ms") if a else None for a in usable],
            "p99": [a.figure("p99_ms") if a else None for a in usable],
        }
        yield (
            "latency.png",
            grouped_figure(
                f"Latency at C = {c}, {protocol}, {workload}, closed loop, keep-alive, "
                f"{_median_of(model)} (lower is better)",
                "Latency (ms)",
                targets,
                series,
                {k: [_status(a, "p99_ms") for a in cells] for k in series},
                colors=NEUTRAL,
                lower_is_better=True,
            ),
        )
    rss = [model.rss(t) for t in targets]
    if any(v is not None for v in rss):
        yield (
            "memory_peak_rss.png",
            grouped_figure(
                "Peak RSS per server: the most over every measured cell (lower is better)",
                "Peak RSS (MiB)",
                targets,
                {"peak RSS": rss},
                {"peak RSS": gaps},
                group_colors=by_server,
                lower_is_better=True,
            ),
        )
    yield from protocol_figures(model, colors, per_cell_chart=one_concurrency)
    setups = sorted({(k[2], k[4]) for k in aggs if k[3] == "connect"})
    if setups:
        series, missing = {}, {}
        setup_protocols = [
            p for p in protocols if any(k[1] == p and k[3] == "connect" for k in aggs)
        ]
        for p in setup_protocols:
            label = f"{p} handshakes/s" if p in ("https", "h2") else f"{p} conn/s"
            keys = [
                next((k for k in aggs if k[0] == t and k[1] == p and k[3] == "connect"), None)
                for t in targets
            ]
            series[label] = [
                aggs[k].figure("conn_per_s") if k and aggs[k].ranked_for("conn_per_s") else None
                for k in keys
            ]
            missing[label] = [_status(aggs[k]) if k else "n/a" for k in keys]
        yield (
            "connection_setup.png",
            grouped_figure(
                f"Connection setup: a new connection per request, {', '.join(setup_protocols)}, "
                + "; ".join(f"{w}, C = {c}" for w, c in setups)
                + f", {_median_of(model)}",
                "Rate (connections/s)",
                targets,
                series,
                missing,
                colors=NEUTRAL,
                # one protocol: a bar per server, in its colour (the title names the protocol)
                group_colors=by_server,
            ),
        )
    if any(k[3] == "open" and a.status == "ok" for k, a in aggs.items()):
        yield "latency_vs_throughput.png", latency_vs_throughput(model, colors)
    if model.capacities():
        yield "capacity_latency.png", capacity_latency(model, colors)
    if one_concurrency:
        yield throughput_at_concurrency(model, colors, shape)
    else:
        lines_of = next(
            (w for w in workloads if any(len(shape.get((p, w), [])) > 1 for p in protocols)), None
        )
        if lines_of is not None:
            yield (
                "throughput_vs_concurrency.png",
                throughput_vs_concurrency(model, colors, lines_of),
            )


def _latency_reference(
    aggs: dict, targets: list[str], protocol: str, workload: str
) -> Optional[tuple]:
    """The highest concurrency at which every measured server is ranked for latency and not
    under-driven (else the highest)."""
    cs = sorted({k[4] for k in aggs if k[1] == protocol and k[2] == workload and k[3] == "closed"})
    if not cs:
        return None
    for c in reversed(cs):
        cells = [aggs.get((t, protocol, workload, "closed", c)) for t in targets]
        if not any(
            a is not None and a.status == "ok" and (a.starved or not a.ranked_for("p99_ms"))
            for a in cells
        ):
            return protocol, workload, c
    return protocol, workload, cs[-1]


def throughput_at_concurrency(
    model: Model, colors: dict[str, str], shape: dict[tuple[str, str], list[int]]
) -> tuple[str, object]:
    """(file name, Figure) of a sweep that measured each (protocol, workload) at one concurrency:
    one panel per protocol, a group per workload, a bar per server in its colour - the cell
    itself, with its bound hatched and its gap (n/a, FAIL, excluded: why) labelled. Named and
    titled by its C (throughput_at_c25.png); when workloads ran at different Cs, each group
    says its own."""
    levels = sorted({cs[0] for cs in shape.values()})
    panels = []
    for p in model.protocols:
        cells = {w: shape[(p, w)][0] for w in model.workloads if (p, w) in shape}
        if not cells:
            continue
        series, missing = {}, {}
        for t in model.listed:
            at = [model.aggs.get((t, p, w, "closed", c)) for w, c in cells.items()]
            series[t] = [a.figure("rps") if a is not None and a.ranked else None for a in at]
            missing[t] = [_status(a) for a in at]
        groups = list(cells) if len(levels) == 1 else [f"{w}\nC = {c}" for w, c in cells.items()]
        panels.append((protocol_title(model, p), groups, series, missing))
    at_c = (
        c_scope(levels)
        if len(levels) == 1
        else "one concurrency per workload (C = " + ", ".join(str(c) for c in levels) + ")"
    )
    return (
        "throughput_at_" + "_".join(f"c{c}" for c in levels) + ".png",
        panel_figure(
            f"Throughput at {at_c}, closed loop, keep-alive, {_median_of(model)}",
            "Throughput (req/s)",
            panels,
            colors,
        ),
    )


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
        f"{_median_of(model)}\n"
        "error bars: min-max of repeats; x = excluded; ‡ = under-driven; open triangle ≥ = a "
        "lower bound (the generator was the limit)",
    )
    return fig


def capacity_latency(model: Model, colors: dict[str, str]):
    """The capacity searches' steps: one panel per protocol, one line per server in its colour -
    corrected p99 against the rate each step achieved (many points, where the open loop has
    two), the p99 objective as a dashed line and each server's capacity as a filled marker."""
    series = capacity.chart_series(model)
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
            xs, ys = zip(*per_server[t])  # sorted by rate: the curve, never the run order
            handles.setdefault(t, _line(ax, list(xs), list(ys), colors[t], t))
            _knee(ax, found[(t, protocol)], per_server[t], colors[t])
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
        f"Capacity search under {' and '.join(objectives)}: every step's corrected p99 vs its "
        f"achieved rate, sorted by rate, {cell.workload}, C = {cell.connections} and up\n"
        "(dashed grey: the objective; star: the capacity found, the median of the searches with "
        "their min-max; triangle: a lower bound the generator set, dashed to the server's CPU "
        "ceiling)",
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
        f"{_median_of(model)}\n(latency from each request's intended send time: coordinated "
        "omission corrected)\npoint labels: offered rate as % of the server's closed-loop "
        "capacity; x = excluded",
    )
    return fig
