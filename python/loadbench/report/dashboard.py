"""The data report.html's dashboard draws from: every cell of the report model ONCE (medians,
spread, marks, the latency spectrum from its stored HDR histograms, its timeline), the server
colours and the controls' choices. The page's script (dashboard.js) draws each chart for the
slice the reader picks (protocol, workload, concurrency, servers), so the file grows with the
cells, not with copies of charts.

    data = dashboard_data(loadbench.report.model.load("reports/2026-12-01-vm"))

A chart's shape follows the data: bars per server at one concurrency, lines over several; a
timeline only where a window has :data:`MIN_TIMELINE_POINTS` intervals to draw a line.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ..core.result import LatencyHistogram
from .bars import server_colors
from .markdown import CONTENDED, DIRTY, GENERATOR_BOUND, PARTIAL, STARVED
from .model import Aggregate, Model

# a timeline with fewer intervals than this is a dot or a segment, not a line: not drawn
MIN_TIMELINE_POINTS = 3
SPECTRUM_STEPS_PER_DECADE = 20


def _key(row: dict) -> tuple:
    return (row["target"], row["protocol"], row["workload"], row["mode"], row["load"])


def cell_records(m: Model) -> dict[tuple, list[dict]]:
    """The measured records (repeats) of every cell key, in the order they were run."""
    out: dict[tuple, list[dict]] = {}
    for rec, row in zip(m.records, m.rows):
        if row["status"] == "ok":
            out.setdefault(_key(row), []).append(rec)
    return out


def pooled_histogram(records: list[dict], block: str = "histogram") -> Optional[LatencyHistogram]:
    """The repeats' stored histograms added bucket by bucket (None when none was stored): a
    picture of the cell's distribution, not a statistic (comparisons use per-repeat values)."""
    hists = []
    for rec in records:
        h = (rec.get("result") or {}).get(block)
        if isinstance(h, dict) and h.get("hdr"):
            hists.append(
                LatencyHistogram.decode(h["hdr"], int(h.get("min") or 0), int(h.get("max") or 0))
            )
    if not hists:
        return None
    size = max(len(h.counts) for h in hists)
    counts = np.zeros(size, dtype=np.int64)
    for h in hists:
        counts[: len(h.counts)] += h.counts
    first = hists[0]
    return LatencyHistogram(
        counts,
        first.lowest,
        first.highest,
        first.significant_figures,
        min(h.min_us for h in hists),
        max(h.max_us for h in hists),
    )


def spectrum(hist: Optional[LatencyHistogram]) -> Optional[dict]:
    """Latency (ms, 4 significant digits) at p = 1 - 1/x for x = 10^(i/20), from p = 0 up to
    the last percentile the count resolves, then the max at x = count. The page rebuilds x."""
    if hist is None or not hist.count:
        return None
    top = math.log10(max(hist.count, 1))
    ys = [
        hist.percentile(100.0 * (1 - 10 ** (-i / SPECTRUM_STEPS_PER_DECADE))) / 1000.0
        for i in range(int(top * SPECTRUM_STEPS_PER_DECADE) + 1)
    ]
    return {"ms": [float(f"{y:.4g}") for y in ys], "max_ms": hist.max / 1000.0, "count": hist.count}


def _median(spread) -> Optional[float]:
    return None if spread is None else spread.median


def marks(a: Aggregate) -> str:
    """The table marks of a cell (as report.md writes them)."""
    return "".join(
        mark
        for mark, on in (
            (DIRTY, a.dirty),
            (CONTENDED, a.contended),
            (STARVED, a.starved),
            (GENERATOR_BOUND, a.bounded_by_generator),
            (PARTIAL, a.failed > 0 and a.status == "ok"),
        )
        if on
    )


def _cell(a: Aggregate, records: list[dict], profile: Optional[dict] = None) -> dict[str, Any]:
    timeline = next(
        (r["result"]["timeline"] for r in records if (r.get("result") or {}).get("timeline")),
        None,
    )
    out: dict[str, Any] = {
        "t": a.target,
        "p": a.protocol,
        "w": a.workload,
        "mode": a.mode,
        "load": a.load,
        "status": a.status,
        "note": a.note,
        "marks": marks(a) if a.status == "ok" else "",
        # what each metric's figure proves: ranked, a bound, or why it is left out
        "ranked": {
            m: a.ranked_for(m)
            for m in (
                "rps",
                "p99_ms",
                "cpu_us",
                "conn_per_s",
                "allocs_per_req",
                "syscalls_per_req",
                "ctx_switches_per_req",
            )
        },
        "bound": a.bound_for("rps"),
        # a bound's reach: the server's CPU ceiling (None when measured or unknown)
        "ceiling": a.figure("rps").ceiling if a.rps else None,
        "why": {m: a.exclusions(m) for m in ("rps", "p99_ms", "cpu_us", "allocs_per_req")},
        "rps": [a.rps.median, a.rps.min, a.rps.max] if a.rps else None,
        "p50": _median(a.p50_ms),
        "p99": _median(a.p99_ms),
        "p999": _median(a.p999_ms),
        "max": _median(a.max_ms),
        "mean": _median(a.mean_ms),
        "cpu": _median(a.cpu_us),
        "allocs": _median(a.allocs_per_req),
        "alloc_bytes": _median(a.alloc_bytes_per_req),
        "allocs_na": a.allocs_na,
        "syscalls": _median(a.syscalls_per_req),
        "syscalls_na": a.syscalls_na,
        "ctx_switches": _median(a.ctx_switches_per_req),
        "rss": a.rss_peak_mib,
        "bad": a.bad_share,
        "conn_per_s": _median(a.conn_per_s),
        "target_rate": _median(a.target_rate),
        "p99_uncorrected": _median(a.p99_uncorrected_ms),
        "spectrum": spectrum(pooled_histogram(records)) if records else None,
        # the cell's flame graph (profile = true), relative to the results folder
        "flamegraph": (profile or {}).get("svg"),
    }
    if a.mode == "open" and records:
        out["spectrum_uncorrected"] = spectrum(pooled_histogram(records, "histogram_uncorrected"))
    if timeline and len(timeline) >= MIN_TIMELINE_POINTS:
        out["timeline"] = {
            "t": [row.get("t_s") for row in timeline],
            "rps": [row.get("rps") for row in timeline],
            "p99": [(row.get("p99_us") or 0) / 1000 for row in timeline],
        }
    return out


def dashboard_data(m: Model) -> dict[str, Any]:
    """Everything the page's script needs, JSON-ready."""
    records = cell_records(m)
    cells = [_cell(a, records.get(a.key, []), m.profile_of(a)) for a in m.aggs.values()]
    closed = [c for c in cells if c["mode"] == "closed"]
    windows = [
        len(r["result"]["timeline"])
        for recs in records.values()
        for r in recs
        if (r.get("result") or {}).get("timeline")
    ]
    return {
        "servers": m.listed,
        "colors": server_colors(m.listed),
        "protocols": m.protocols,
        "workloads": [w for w in m.workloads if any(c["w"] == w for c in cells)],
        "concurrencies": sorted({c["load"] for c in closed}),
        "open_loads": sorted({c["load"] for c in cells if c["mode"] == "open"}),
        "open_workload": m.settings.get("open_loop_workload", "plaintext"),
        "repeats": m.settings.get("repeats"),
        "cells": cells,
        "allocations": m.counts_allocations(),  # the allocs/req chart and table columns
        # the syscalls/req and ctx switches/req table columns
        "kernel": any(a.kernel_counted for a in m.aggs.values()),
        # why no timeline is drawn, when none is: the intervals a window had
        "timeline_intervals": max(windows, default=0),
        "min_timeline_points": MIN_TIMELINE_POINTS,
        "steps_per_decade": SPECTRUM_STEPS_PER_DECADE,
        # the first screen's charts, per protocol (like with like): {protocol: {server: bar}}
        "headline": {
            "peak": {
                p: {
                    t: _headline(m.peak(t, p), m.peak_cell(t, p), m.gap(m.cells(t, p)))
                    for t in m.listed
                }
                for p in m.protocols
            },
            "cpu": {
                p: {
                    t: _headline(m.best_cpu(t, p), None, m.gap(m.cells(t, p), "cpu_us"))
                    for t in m.listed
                }
                for p in m.protocols
            },
        },
    }


def _headline(value, cell: Optional[Aggregate], gap: str) -> dict[str, Any]:
    """One bar: the figure, its bound and CPU ceiling, the repeats' range, where it was."""
    spread = getattr(value, "spread", None)
    return {
        "value": None if value is None else float(value),
        "bound": getattr(value, "bound", None),
        "ceiling": getattr(value, "ceiling", None),
        "lo": spread[0] if spread else None,
        "hi": spread[1] if spread else None,
        "hover": None if cell is None else f"{cell.protocol} {cell.workload} C={cell.load}",
        "gap": gap,
    }


def capacity_figure(m: Model):
    """The capacity searches as a plotly figure (report.html): per server its steps sorted by
    the rate they achieved - the latency curve, never the order they ran in - the objective as
    a dashed line, and the searched knee: a star at the capacity (the median of the searches,
    their range as a whisker) or a triangle at a generator-bound lower bound, dashed to the
    server's CPU ceiling. None without capacity cells."""
    import plotly.graph_objects as go

    from . import capacity

    series = capacity.chart_series(m)
    if not series:
        return None
    protocol, per_server = next(iter(series.items()))
    colors = server_colors(m.listed)
    fig = go.Figure()
    rates = [x for points in per_server.values() for x, _ in points]
    for t in m.listed:
        if t not in per_server:
            continue
        xs, ys = zip(*per_server[t])
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers",
                name=t,
                legendgroup=t,
                line={"color": colors[t]},
                hovertemplate=t + ": %{x:,.0f} req/s, p99 %{y:.2f} ms<extra></extra>",
            )
        )
        figure = m.capacities()[(t, protocol)].figure
        if figure is None:
            continue
        x = float(figure)
        y = min(per_server[t], key=lambda p: abs(p[0] - x))[1]
        spread = figure.spread
        fig.add_trace(
            go.Scatter(
                x=[x],
                y=[y],
                mode="markers",
                legendgroup=t,
                showlegend=False,
                marker={
                    "symbol": "star" if figure.bound is None else "triangle-right",
                    "size": 16,
                    "color": colors[t],
                    "line": {"color": "#222", "width": 1},
                },
                error_x=(
                    {
                        "type": "data",
                        "symmetric": False,
                        "array": [spread[1] - x],
                        "arrayminus": [x - spread[0]],
                    }
                    if spread and figure.bound is None
                    else None
                ),
                hovertemplate=t + ": capacity " + figure.prefix + f"{x:,.0f} req/s<extra></extra>",
            )
        )
        if figure.ceiling:
            fig.add_trace(
                go.Scatter(
                    x=[x, figure.ceiling],
                    y=[y, y],
                    mode="lines",
                    legendgroup=t,
                    showlegend=False,
                    line={"color": colors[t], "dash": "dash"},
                    hovertemplate=t
                    + f": at most {figure.ceiling:,.0f} req/s by CPU<extra></extra>",
                )
            )
    limit = capacity.latency_limit_ms(capacity.objectives_of(m))
    if limit is not None:
        fig.add_hline(y=limit, line_dash="dash", line_color="#555")
    log_x = bool(rates) and max(rates) / max(min(rates), 1e-9) > 30
    fig.update_xaxes(title="achieved rate of the step (req/s)", type="log" if log_x else "linear")
    fig.update_yaxes(title="p99, corrected (ms)", type="log")
    fig.update_layout(
        title=(
            f"Capacity under {' and '.join(capacity.objectives_of(m))}, {protocol}: each step's "
            "p99 by rate<br><span style='font-size:11px;color:#666'>star: the capacity (median, "
            "min-max of the searches); triangle: a lower bound, dashed to the CPU ceiling</span>"
        ),
        template="plotly_white",
        height=520,
        margin={"l": 70, "r": 20, "t": 60, "b": 60},
    )
    return fig


def comparison_figure(frame, title: str = "Change new vs base"):
    """The comparison (``loadbench compare``) as a plotly figure: change in % per cell and
    metric with its interval; red worse, green better, grey ~. None when there is nothing."""
    import plotly.graph_objects as go

    if frame is None or frame.empty:
        return None
    colours = {"worse": "#c0392b", "better": "#27ae60"}
    fig = go.Figure()
    for verdict in ("worse", "better", "~", "uncertain", "too few repeats", "not comparable"):
        part = frame[(frame.verdict == verdict) & frame.change_pct.notna()]
        if part.empty:
            continue
        x = [
            f"{r.target} {r.protocol} {r.workload} {r.mode} {r.load} | {r.label}"
            for r in part.itertuples()
        ]

        def whisker(r, low: bool) -> float:
            edge = r.ci_low_pct if low else r.ci_high_pct
            if edge is None or edge != edge:  # no interval (NaN)
                return 0
            return (r.change_pct - edge) if low else (edge - r.change_pct)

        fig.add_trace(
            go.Bar(
                x=x,
                y=list(part.change_pct),
                name=verdict,
                marker_color=colours.get(verdict, "#95a5a6"),
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [whisker(r, False) for r in part.itertuples()],
                    "arrayminus": [whisker(r, True) for r in part.itertuples()],
                },
                hovertemplate="%{x}<br>%{y:+.1f} %<extra>" + verdict + "</extra>",
            )
        )
    fig.update_yaxes(title="change of the median (%)", zeroline=True)
    fig.update_layout(
        title=title,
        template="plotly_white",
        height=520,
        margin={"l": 70, "r": 20, "t": 50, "b": 200},
    )
    return fig
