"""The charts of seed report 001's sections (report_protocols.py): protocol comparison (peak and
average), workload breakdown per protocol (peak and average), mean latency by protocol and the
variant speedup. Panels of grouped bars, one bar per server in its colour (plots.server_colors);
every value is a :class:`loadbench.model.Model` method.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

from .model import HTTP1_PROTOCOLS, HTTP2_PROTOCOLS, Model
from .plots import BOUND_NOTE, _fmt, _plt, mark_bounds

NAMES = {"http": "HTTP/1.1\n(http)", "https": "HTTP/1.1 TLS\n(https)", "h2c": "HTTP/2\n(h2c)", "h2": "HTTP/2 TLS\n(h2)"}
Panel = tuple  # (title, groups, {series: [value per group]}, {series: [gap text per group]})


def panel_bars(path: Path, title: str, ylabel: str, panels: list[Panel], colors: dict[str, str],
               fmt=None) -> Optional[Path]:
    """Grouped bars in one panel per entry of ``panels`` (same y axis), a legend of the series
    (servers) at the right, values above the bars (vertical when the bars are narrow), gaps
    labelled (n/a, FAIL, excluded), bounds hatched and labelled "≥". No file (and any old one
    removed) when nothing has a value."""
    values = [v for _, _, series, _ in panels for vs in series.values() for v in vs if v is not None]
    if not values:
        path.unlink(missing_ok=True)
        return None
    fmt = fmt or (lambda v: _fmt(v).replace(",", " "))  # 12 345, as in the tables
    plt = _plt()
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter

    top = max(values)
    ncols = min(2, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    n_series = max(len(series) for _, _, series, _ in panels)
    n_groups = max(len(groups) for _, groups, _, _ in panels)
    width_in = max(4.5, n_groups * max(1.0, 0.26 * n_series) + 1.2)
    legend_in = 1.9
    fig, axes = plt.subplots(nrows, ncols, figsize=(width_in * ncols + legend_in, 4.0 * nrows + 0.7),
                             squeeze=False, sharey=True)
    handles: dict = {}
    bounded = False
    vertical = n_series > 2
    for ax, (sub, groups, series, missing) in zip(axes.flat, panels):
        n = max(1, len(series))
        width = 0.8 / n
        for i, (label, vals) in enumerate(series.items()):
            xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
            bars = ax.bar(xs, [v if v is not None else 0 for v in vals], width * 0.92, label=label,
                          color=colors.get(label, "#7f7f7f"))
            bounded = mark_bounds(bars, vals) or bounded
            # the legend names the server's colour, never a hatch one of its bars happens to have
            handles.setdefault(label, Patch(facecolor=colors.get(label, "#7f7f7f")))
            for j, (bar, value) in enumerate(zip(bars, vals)):
                x = bar.get_x() + bar.get_width() / 2
                if value is None:
                    ax.text(x, top * 0.01, (missing.get(label) or ["n/a"] * len(vals))[j] or "n/a", ha="center",
                            va="bottom", rotation=90, fontsize=7, color="#555555")
                else:
                    ax.text(x, value, " " + fmt(value) if vertical else fmt(value), ha="center", va="bottom",
                            rotation=90 if vertical else 0, fontsize=7)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, fontsize=9)
        ax.set_title(sub, fontsize=10)
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, top * (1.3 if vertical else 1.15))
        ax.grid(axis="y", alpha=0.3)
        ax.tick_params(labelleft=True)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}".replace(",", " ") if top >= 100 else f"{v:g}"))
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title + (f" ({BOUND_NOTE})" if bounded else ""), fontsize=11)
    fig.legend(list(handles.values()), list(handles), loc="center left", fontsize=8,
               bbox_to_anchor=(1 - (legend_in - 0.1) / fig.get_figwidth(), 0.5))
    fig.tight_layout(rect=(0, 0, 1 - legend_in / fig.get_figwidth(), 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _series(model: Model, value, protocol_of) -> tuple[dict, dict]:
    """{server: [value per group]}, {server: [gap per group]} for the groups protocol_of lists."""
    series, missing = {}, {}
    for t in model.targets:
        series[t] = [value(t, g) for g in protocol_of]
        missing[t] = [model.gap(model.cells(t, p)) for p in protocol_of]
    return series, missing


def protocol_charts(model: Model, colors: dict[str, str]) -> list[Path]:
    d = model.directory
    out: list[Optional[Path]] = []
    h2 = [p for p in HTTP2_PROTOCOLS if p in model.protocols]
    pairs = [(label, [p for p in (a, b) if p in model.protocols]) for label, a, b in model.pairs()]
    if h2 and pairs:
        for kind, get, what in (("peak", model.peak, "Peak"), ("average", model.average, "Average")):
            panels = []
            for label, ps in pairs:
                series, missing = _series(model, get, ps)
                panels.append((label.capitalize() if label == "cleartext" else label, [NAMES[p] for p in ps],
                               series, missing))
            out.append(panel_bars(d / f"protocol_{kind}.png",
                                  f"Protocol comparison: {what.lower()} throughput, HTTP/1.1 vs HTTP/2",
                                  f"{what} throughput (req/s)", panels, colors))
    workloads = [w for w in model.workloads if model.cells(workload=w)]
    if len(workloads) > 1 and len(model.protocols) > 1:
        for kind, what in (("peak", "Peak"), ("average", "Average")):
            panels = []
            for p in model.protocols:
                series, missing = {}, {}
                for t in model.targets:
                    series[t] = [model.peak(t, p, w) if kind == "peak" else model.average(t, p, workload=w)
                                 for w in workloads]
                    missing[t] = [model.gap(model.cells(t, p, w)) for w in workloads]
                panels.append((NAMES[p].replace("\n", " "), workloads, series, missing))
            out.append(panel_bars(d / f"workloads_{kind}.png", f"Workload breakdown: {what.lower()} throughput by protocol",
                                  f"{what} throughput (req/s)", panels, colors))
    families = [(name, ps) for name, ps in (("HTTP/1.1", HTTP1_PROTOCOLS), ("HTTP/2", HTTP2_PROTOCOLS))
                if any(p in model.protocols for p in ps)]
    if len(families) > 1:
        groups = [name for name, _ in families] + ["Overall"]
        sets = [ps for _, ps in families] + [None]
        series = {t: [model.mean_latency(t, ps) for ps in sets] for t in model.targets}
        missing = {t: [model.gap(model.cells(t, ps)) for ps in sets] for t in model.targets}
        out.append(panel_bars(d / "latency_by_protocol.png", "Mean latency by protocol (lower is better)",
                              "Mean latency (ms)", [("", groups, series, missing)], colors))
    for base, variant in model.variants():
        groups, a, b = [], [], []
        for p in model.protocols:
            for w in workloads:
                if model.peak(base, p, w) is None and model.peak(variant, p, w) is None:
                    continue
                groups.append(f"{p}\n{w}")
                a.append(model.peak(base, p, w))
                b.append(model.peak(variant, p, w))
        out.append(panel_bars(d / f"variant_{variant}_vs_{base}.png", f"{variant} vs {base}: peak throughput",
                              "Peak throughput (req/s)",
                              [("", groups, {base: a, variant: b},
                                {base: ["n/a"] * len(a), variant: ["n/a"] * len(b)})], colors))
    return [p for p in out if p is not None]
