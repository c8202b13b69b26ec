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

from pathlib import Path
from typing import Iterator, Optional

from ..core import protocols
from .bars import (
    NEUTRAL,
    HPanel,
    grouped_figure,
    hbar_figure,
    panel_figure,
    save_figure,
    server_colors,
    sort_panel,
)
from .line_charts import (
    capacity_latency,
    latency_vs_throughput,
    median_of,
    throughput_vs_concurrency,
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
    aggs, targets, measured = model.aggs, model.listed, model.protocols
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
        ("average", model.shared_average, "mean over the closed-loop cells every server ranked"),
    ):
        # like with like: a panel per protocol, its servers ranked top to bottom
        yield (
            f"throughput_{kind}.png",
            hbar_figure(
                f"{kind.capitalize()} throughput per protocol: {what} (every workload, {scope}, "
                f"{median_of(model)})",
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
                    for p in measured
                ],
            ),
        )
    if "http" in measured and "https" in measured:
        series = {f"{p} peak": [model.peak(t, p) for t in targets] for p in ("http", "https")}
        for p in (
            "http",
            "https",
        ):  # averages over the ranked cells of p that every server with p has
            series[f"{p} average"] = [model.shared_average(t, p) for t in targets]
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
        aggs, targets, measured[0] if measured else "http", workloads[0] if workloads else ""
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
                f"{median_of(model)} (lower is better)",
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
            p for p in measured if any(k[1] == p and k[3] == "connect" for k in aggs)
        ]
        for p in setup_protocols:
            label = f"{p} handshakes/s" if p in protocols.TLS else f"{p} conn/s"
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
                + f", {median_of(model)}",
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
            (w for w in workloads if any(len(shape.get((p, w), [])) > 1 for p in measured)), None
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
            f"Throughput at {at_c}, closed loop, keep-alive, {median_of(model)}",
            "Throughput (req/s)",
            panels,
            colors,
        ),
    )
