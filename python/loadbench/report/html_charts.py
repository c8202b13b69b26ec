"""The interactive (plotly) charts of the HTML report, each drawn from the report model.

Every function takes a :class:`loadbench.model.Model` and returns a :class:`Chart` (None when
the results hold nothing to draw). Medians and flags are the model's; the latency spectra are
drawn from the HDR histograms stored with each repeat (results.jsonl ``result.histogram``),
added bucket by bucket over a cell's repeats - a picture of the cell's distribution, not a
statistic (the comparison's tests use per-repeat values).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..core.result import LatencyHistogram
from .model import Aggregate, Model

LAYOUT = {
    "template": "plotly_white",
    "height": 460,
    "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
    "legend": {"font": {"size": 11}},
    "hovermode": "closest",
}
# 1/(1-p) axis: where the percentile labels go
SPECTRUM_TICKS = [
    (1, "0 %"),
    (2, "50 %"),
    (10, "90 %"),
    (100, "99 %"),
    (1e3, "99.9 %"),
    (1e4, "99.99 %"),
    (1e5, "99.999 %"),
    (1e6, "99.9999 %"),
    (1e7, "99.99999 %"),
]


@dataclass
class Chart:
    id: str
    title: str
    figure: Any  # plotly.graph_objects.Figure
    note: str = ""


def _go():
    import plotly.graph_objects as go

    return go


def _label(a: Aggregate, metric: str = "rps") -> str:
    """Hover text; the exclusions are the ones of the chart's metric (model.SERVER_COST_METRICS)."""
    load = {
        "closed": f"C={a.load}",
        "connect": f"new-conn c={a.load}",
        "open": f"open {a.load} %",
    }.get(a.mode, "")
    marks = "" if a.ranked_for(metric) else " (excluded: " + ", ".join(a.exclusions(metric)) + ")"
    if a.ranked_for(metric) and a.bound_for(metric):
        marks = (
            " (generator-bound: "
            + ("at least" if a.bound_for(metric) == "lower" else "at most")
            + " this)"
        )
    return f"{a.target} {a.protocol} {a.workload} {load}{marks}"


def _shown(m: Model, a: Aggregate) -> object:
    """Plotly visibility: a sweep's first protocol and workload are drawn; every other cell is
    in the legend, one click away (dozens of overlaid spectra read as noise)."""
    first = (m.protocols[:1] or [a.protocol])[0], (m.workloads[:1] or [a.workload])[0]
    return True if (a.protocol, a.workload) == first else "legendonly"


def _key(row: dict) -> tuple:
    return (row["target"], row["protocol"], row["workload"], row["mode"], row["load"])


def _records(m: Model, key: tuple) -> list[dict]:
    """The measured records (repeats) of one cell, in the order they were run."""
    return [
        rec for rec, row in zip(m.records, m.rows) if row["status"] == "ok" and _key(row) == key
    ]


def pooled_histogram(records: list[dict], block: str = "histogram") -> Optional[LatencyHistogram]:
    """The repeats' stored histograms added bucket by bucket (None when none was stored)."""
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


def spectrum(
    hist: LatencyHistogram, steps_per_decade: int = 20
) -> tuple[list[float], list[float], list[str]]:
    """(x = 1/(1-p), latency ms, hover text) from p = 0 up to the last percentile the count
    resolves; the max is the last point."""
    count = hist.count
    if not count:
        return [], [], []
    xs, ys, text = [], [], []
    top = math.log10(max(count, 1))
    for i in range(int(top * steps_per_decade) + 1):
        x = 10 ** (i / steps_per_decade)
        q = 100.0 * (1 - 1 / x)
        xs.append(x)
        ys.append(hist.percentile(q) / 1000.0)
        text.append(f"p{q:.4g}")
    xs.append(max(count, xs[-1] * 1.05))
    ys.append(hist.max / 1000.0)
    text.append("max")
    return xs, ys, text


def _spectrum_axes(fig, title: str) -> None:
    fig.update_xaxes(
        type="log",
        title="percentile (log 1/(1-p))",
        tickvals=[v for v, _ in SPECTRUM_TICKS],
        ticktext=[t for _, t in SPECTRUM_TICKS],
    )
    fig.update_yaxes(type="log", title="latency (ms)")
    fig.update_layout(title=title, **LAYOUT)


def throughput(m: Model) -> Optional[Chart]:
    go = _go()
    fig = go.Figure()
    groups: dict[tuple, list[Aggregate]] = {}
    for a in m.cells(mode="closed"):
        if a.status == "ok" and a.rps:
            groups.setdefault((a.target, a.protocol, a.workload), []).append(a)
    for (t, p, w), cells in groups.items():
        cells.sort(key=lambda a: a.load)
        fig.add_trace(
            go.Scatter(
                x=[a.load for a in cells],
                y=[a.rps.median for a in cells],
                name=f"{t} {p} {w}",
                mode="lines+markers",
                line={"dash": "dash" if p == "https" else "solid"},
                marker={
                    "symbol": [
                        ("triangle-up-open" if a.bound_for("rps") else "circle")
                        if a.ranked
                        else "x"
                        for a in cells
                    ],
                    "size": 9,
                },
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [a.rps.max - a.rps.median for a in cells],
                    "arrayminus": [a.rps.median - a.rps.min for a in cells],
                },
                text=[_label(a) for a in cells],
                customdata=["≥ " if a.bound_for("rps") else "" for a in cells],
                hovertemplate="%{text}<br>%{customdata}%{y:,.0f} req/s<extra></extra>",
            )
        )
    if not groups:
        return None
    fig.update_xaxes(type="log", title="concurrency (connections)")
    fig.update_yaxes(title="median req/s (bars: min-max of repeats)", rangemode="tozero")
    fig.update_layout(title="Throughput vs concurrency (closed loop)", **LAYOUT)
    return Chart(
        "throughput",
        "Throughput",
        fig,
        "Median of repeats; x marks a cell the model does not rank; an open "
        "triangle a lower bound (≥: generator-bound, the server did at least this).",
    )


def latency_spectrum(m: Model) -> Optional[Chart]:
    go = _go()
    fig = go.Figure()
    for a in m.cells(mode="closed"):
        hist = pooled_histogram(_records(m, a.key)) if a.status == "ok" else None
        if hist is None or not hist.count:
            continue
        xs, ys, text = spectrum(hist)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                text=text,
                name=_label(a),
                mode="lines",
                visible=_shown(m, a),
                line={"dash": "dash" if a.protocol == "https" else "solid"},
                hovertemplate=f"{_label(a)}<br>%{{text}}: %{{y:.3f}} ms<extra></extra>",
            )
        )
    if not fig.data:
        return None
    _spectrum_axes(fig, "Latency percentile spectrum (closed loop, repeats' histograms added)")
    return Chart(
        "latency_spectrum",
        "Latency percentile spectrum",
        fig,
        "From the stored HDR histograms. The first protocol and workload are drawn; click a legend "
        "entry to show or hide any other cell.",
    )


def open_loop(m: Model) -> Optional[Chart]:
    go = _go()
    fig = go.Figure()
    for a in m.cells(mode="open"):
        records = _records(m, a.key) if a.status == "ok" else []
        for block, dash, what in (
            ("histogram", "solid", "corrected"),
            ("histogram_uncorrected", "dot", "uncorrected"),
        ):
            hist = pooled_histogram(records, block)
            if hist is None or not hist.count:
                continue
            xs, ys, text = spectrum(hist)
            name = f"{_label(a)} {what}"
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    text=text,
                    name=name,
                    mode="lines",
                    line={"dash": dash},
                    legendgroup=_label(a),
                    visible=_shown(m, a),
                    hovertemplate=f"{name}<br>%{{text}}: %{{y:.3f}} ms<extra></extra>",
                )
            )
    if not fig.data:
        return None
    _spectrum_axes(fig, "Open loop: corrected (from the intended send) vs uncorrected latency")
    return Chart(
        "open_loop",
        "Open loop: corrected vs uncorrected",
        fig,
        "Solid: latency from each request's intended send time (coordinated omission corrected); "
        "dotted: from the actual send.",
    )


def timelines(m: Model) -> Optional[Chart]:
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=("req/s per interval", "p99 per interval (ms)"),
    )
    for a in m.cells(mode=None):
        records = _records(m, a.key) if a.status == "ok" else []
        timeline = next(
            (
                r["result"].get("timeline")
                for r in records
                if (r.get("result") or {}).get("timeline")
            ),
            None,
        )
        if not timeline:
            continue
        t = [row.get("t_s") for row in timeline]
        shown = _shown(m, a) if a.mode == "closed" else "legendonly"
        fig.add_trace(
            go.Scatter(
                x=t,
                y=[row.get("rps") for row in timeline],
                name=_label(a),
                legendgroup=_label(a),
                mode="lines+markers",
                visible=shown,
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=t,
                y=[(row.get("p99_us") or 0) / 1000 for row in timeline],
                name=_label(a),
                legendgroup=_label(a),
                showlegend=False,
                mode="lines+markers",
                visible=shown,
            ),
            row=2,
            col=1,
        )
    if not fig.data:
        return None
    fig.update_xaxes(title="seconds into the measured window", row=2, col=1)
    fig.update_yaxes(type="log", row=2, col=1)
    fig.update_layout(
        title="Timelines (first measured repeat of each cell)", **{**LAYOUT, "height": 620}
    )
    return Chart(
        "timelines",
        "Timelines",
        fig,
        "One line per cell (closed loop of the first protocol and workload drawn); the legend toggles a cell "
        "in both panels.",
    )


def _bars(
    m: Model, value, title: str, axis: str, chart_id: str, note: str, metric: str
) -> Optional[Chart]:
    go = _go()
    fig = go.Figure()
    cells = [a for a in m.cells(mode=None) if a.status == "ok"]
    order = sorted(
        {(a.protocol, a.workload, a.mode, a.load) for a in cells},
        key=lambda k: (k[0], k[1], k[2], k[3]),
    )
    names = [
        f"{p} {w} "
        + ({"closed": f"C={c}", "connect": f"new-conn {c}", "open": f"open {c} %"}[mode])
        for p, w, mode, c in order
    ]
    for t in m.targets:
        mine = {(a.protocol, a.workload, a.mode, a.load): a for a in cells if a.target == t}
        ys = [value(mine[k]) if k in mine else None for k in order]
        if all(y is None for y in ys):
            continue
        fig.add_trace(
            go.Bar(
                x=names,
                y=ys,
                name=t,
                hovertext=[_label(mine[k], metric) if k in mine else "" for k in order],
                hovertemplate="%{hovertext}<br>%{y:.2f}<extra></extra>",
            )
        )
    if not fig.data:
        return None
    fig.update_yaxes(title=axis, rangemode="tozero")
    fig.update_layout(title=title, barmode="group", **LAYOUT)
    return Chart(chart_id, title, fig, note)


def cpu(m: Model) -> Optional[Chart]:
    return _bars(
        m,
        lambda a: a.cpu_us.median if a.cpu_us else None,
        "Server CPU per request",
        "CPU us/req (median)",
        "cpu",
        "Server CPU time in the window / exact responses, median of repeats.",
        "cpu_us",
    )


def rss(m: Model) -> Optional[Chart]:
    return _bars(
        m,
        lambda a: a.rss_peak_mib,
        "Server peak RSS",
        "peak RSS (MiB)",
        "rss",
        "The largest resident set the sampler saw over the cell's repeats.",
        "rss_peak_mib",
    )


def comparison(frame, title: str = "Change new vs base") -> Optional[Chart]:
    """Change in % per cell and metric with its interval; red worse, green better, grey ~."""
    go = _go()
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
        low = [
            (r.change_pct - r.ci_low_pct)
            if r.ci_low_pct == r.ci_low_pct and r.ci_low_pct is not None
            else 0
            for r in part.itertuples()
        ]
        high = [
            (r.ci_high_pct - r.change_pct)
            if r.ci_high_pct == r.ci_high_pct and r.ci_high_pct is not None
            else 0
            for r in part.itertuples()
        ]
        fig.add_trace(
            go.Bar(
                x=x,
                y=list(part.change_pct),
                name=verdict,
                marker_color=colours.get(verdict, "#95a5a6"),
                error_y={"type": "data", "symmetric": False, "array": high, "arrayminus": low},
                hovertemplate="%{x}<br>%{y:+.1f} %<extra>" + verdict + "</extra>",
            )
        )
    fig.update_yaxes(title="change of the median (%)", zeroline=True)
    fig.update_layout(
        title=title, **{**LAYOUT, "height": 520, "margin": {**LAYOUT["margin"], "b": 200}}
    )
    return Chart(
        "comparison",
        "Comparison",
        fig,
        "Bars: change of the median; whiskers: Hodges-Lehmann interval.",
    )


def all_charts(m: Model) -> list[Chart]:
    charts = [throughput(m), latency_spectrum(m), open_loop(m), timelines(m), cpu(m), rss(m)]
    return [c for c in charts if c is not None]
