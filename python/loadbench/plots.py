"""PNG charts of a sweep (matplotlib, Agg backend): in the spirit of seed report 001.

Every chart has a title, axis labels with units and a legend; bar charts print their values
on the bars, and a server that was not measured shows "n/a" / "FAIL" where its bar would be.
All figures come from the same report model as report.md (loadbench.model): peaks and
averages over ranked cells only (a cell with > 1 % non-2xx/errors or a contended one shows
"excluded: why" where its bar would be). A figure that is a bound (a generator-bound cell
entered it) is drawn as a hatched, outlined bar labelled "≥ N" (or "≤ N"): the server's value
is at least (at most) the bar, never exactly it.

    loadbench.plots.write_charts("reports/2026-11-29-host")  # -> [Path(...png), ...]
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from .model import Aggregate, Model
from .model import load as load_model

# One colour per server, by its place in the sweep's target list, in every chart (tab10, then
# the lighter tab20 shades for sweeps of more than ten servers).
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94"]


# Series that are not servers (workloads, protocols) get neutral tones, so a colour always means
# the same server.
NEUTRAL = ["#3b3b3b", "#8c8c8c", "#c8c8c8", "#5e5e5e", "#aaaaaa", "#e0e0e0"]
LINESTYLES = {"http": "-", "https": "--", "h2c": ":", "h2": "-."}


def server_colors(targets: list[str]) -> dict[str, str]:
    """The colour of each server, the same in every chart of a report."""
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(targets)}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _fmt(value: float) -> str:
    """A bar's label; a bound keeps its sign ("≥ 264,590", see analysis.Figure)."""
    sign = getattr(value, "prefix", "")
    if value >= 100:
        return sign + f"{value:,.0f}"
    if value >= 10:
        return sign + f"{value:.1f}"
    if value >= 1:
        return sign + f"{value:.2f}"
    return sign + f"{value:.3f}"


BOUND_HATCH = "///"
BOUND_NOTE = "hatched: a bound, ≥ at least / ≤ at most - the generator was the limit"


def mark_bounds(bars, values) -> bool:
    """Hatch and outline the bars whose value is a bound (a Figure with ``bound``): the
    server's value is beyond the bar, not on it. True when any was."""
    marked = False
    for bar, value in zip(bars, values):
        if getattr(value, "bound", None):
            bar.set_hatch(BOUND_HATCH)
            bar.set_edgecolor("#222222")
            bar.set_linewidth(1.0)
            bar.set_alpha(0.55)
            marked = True
    return marked


def grouped_bars(path: Path, title: str, ylabel: str, groups: list[str], series: dict[str, list],
                 missing: Optional[dict[str, list]] = None, xlabel: str = "Server",
                 colors: Optional[list[str]] = None, log_if_spread: Optional[float] = None,
                 group_colors: Optional[list[str]] = None) -> Optional[Path]:
    """Bars for each series within each group, value on each bar, "n/a"/"FAIL"/"excluded" for
    gaps; no chart (None, and any old file of that name removed) when there is no value at all.
    ``group_colors``: one colour per group (a single series over the servers, each in its colour).

    ``log_if_spread``: use a log value axis when max/min of the values exceeds it (latency
    bars spanning 0.05 ms to 200 ms are unreadable on a linear axis)."""
    if not any(v is not None for values in series.values() for v in values):
        path.unlink(missing_ok=True)  # e.g. every cell contended: a chart of empty bars says nothing
        return None
    plt = _plt()
    n = max(1, len(series))
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(groups) * max(1, n / 2)), 4.5))
    values_all = [v for vals in series.values() for v in vals if v is not None and v > 0]
    top = max(values_all or [1.0])
    bottom = min(values_all or [1.0])
    log = log_if_spread is not None and top / bottom > log_if_spread
    floor = bottom / 2 if log else 0.0
    bounded = False
    from matplotlib.patches import Patch

    legend = []  # plain colour patches: a hatched first bar must not make a series look like a bound
    for i, (label, values) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        color = (colors or PALETTE)[i % len(colors or PALETTE)]
        heights = [v if v is not None else 0 for v in values]
        bars = ax.bar(xs, heights, width * 0.95, label=label,
                      color=group_colors if group_colors and n == 1 else color)
        bounded = mark_bounds(bars, values) or bounded
        legend.append(Patch(facecolor=color, label=label))
        for j, (bar, value) in enumerate(zip(bars, values)):
            if value is None:
                text = (missing or {}).get(label, ["n/a"] * len(values))[j] or "n/a"
                ax.text(bar.get_x() + bar.get_width() / 2, floor * 1.1 if log else top * 0.01, text,
                        ha="center", va="bottom",
                        fontsize=8, color="#555555", rotation=90)
            else:
                ax.text(bar.get_x() + bar.get_width() / 2, value, _fmt(value).replace(",", " "), ha="center",
                        va="bottom", fontsize=8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_title(title + (f"\n({BOUND_NOTE})" if bounded else ""), fontsize=11 if bounded else None)
    ax.set_xlabel(xlabel)
    if log:
        _plain_log_axis(ax)
        ax.set_ylim(floor, top * 2.0)
        ax.set_ylabel(ylabel + ", log scale")
    else:
        from matplotlib.ticker import FuncFormatter

        ax.set_ylabel(ylabel)
        ax.set_ylim(0, top * 1.15)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}".replace(",", " ") if top >= 100 else f"{v:g}"))
    if not (group_colors and n == 1):  # the x labels already name a server's bar
        # outside the axes: it never hides a bar's value
        ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plain_log_axis(ax) -> None:
    """A log y axis labelled 0.5, 1, 2, 5, 10 ... instead of 5x10^-1."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _status(agg: Optional[Aggregate], metric: str = "rps") -> str:
    """What a chart prints where this cell's bar would be."""
    if agg is None or agg.status == "skipped":
        return "n/a"
    if agg.status == "fail":
        return "FAIL"
    if not agg.ranked_for(metric):
        return "excluded: " + ", ".join(agg.exclusion_words(metric))
    return "under-driven" if agg.starved else "n/a"


def _closed(aggs: dict, target: str, protocol: str, workload: str) -> list[Aggregate]:
    return [a for k, a in aggs.items() if k[0] == target and k[3] == "closed" and k[1] == protocol and k[2] == workload]


def write_charts(source) -> list[Path]:
    """Write every chart that the model (or results folder) can support; returns their paths."""
    model = source if isinstance(source, Model) else load_model(source)
    if model.directory is None:
        raise ValueError("write_charts needs a model loaded from a folder (where the PNGs go)")
    aggs, targets, protocols = model.aggs, model.targets, model.protocols
    workloads = [w for w in model.workloads if any(k[2] == w for k in aggs)]
    out: list[Optional[Path]] = []
    d = model.directory
    if not any(a.status == "ok" for a in aggs.values()):
        return out  # nothing measured: no chart of empty bars

    colors = server_colors(targets)
    by_server = [colors[t] for t in targets]
    peaks = [model.peak(t) for t in targets]
    gaps = [model.gap(model.cells(t)) for t in targets]
    out.append(grouped_bars(d / "throughput_peak.png", "Peak throughput per server (best closed-loop cell)",
                            "Throughput (req/s)", targets, {"peak req/s": peaks}, {"peak req/s": gaps},
                            group_colors=by_server))
    means = [model.average(t) for t in targets]
    out.append(grouped_bars(d / "throughput_average.png",
                            f"Average throughput per server (mean over the {len(model.common())} ranked cells all share)",
                            "Throughput (req/s)", targets, {"average req/s": means}, {"average req/s": gaps},
                            group_colors=by_server))
    if "http" in protocols and "https" in protocols:
        series = {f"{p} peak": [model.peak(t, p) for t in targets] for p in ("http", "https")}
        for p in ("http", "https"):  # averages over the ranked cells of p that every server with p has
            series[f"{p} average"] = [model.average(t, p) for t in targets]
        missing = {f"{p} {kind}": [model.gap(model.cells(t, p)) for t in targets]
                   for p in ("http", "https") for kind in ("peak", "average")}
        out.append(grouped_bars(d / "protocol_http_vs_https.png", "HTTP vs HTTPS throughput (keep-alive)",
                                "Throughput (req/s)", targets, series, missing,
                                colors=[NEUTRAL[0], NEUTRAL[1], NEUTRAL[3], NEUTRAL[2]]))
    if len(workloads) > 1:
        series = {w: [model.peak(t, workload=w) for t in targets] for w in workloads}
        missing = {w: [model.gap(model.cells(t, workload=w)) for t in targets] for w in workloads}
        out.append(grouped_bars(d / "workloads.png", "Workload breakdown: peak throughput per workload",
                                "Throughput (req/s)", targets, series, missing, colors=NEUTRAL))
    ref = _latency_reference(aggs, targets, protocols[0] if protocols else "http", workloads[0] if workloads else "")
    if ref is not None:
        protocol, workload, c = ref
        cells = [aggs.get((t, protocol, workload, "closed", c)) for t in targets]
        usable = [a if a is not None and a.ranked_for("p99_ms") and not a.starved else None for a in cells]
        series = {"p50": [a.p50_ms.median if a and a.p50_ms else None for a in usable],
                  "p99": [a.p99_ms.median if a and a.p99_ms else None for a in usable]}
        out.append(grouped_bars(d / "latency.png", f"Latency at C = {c} ({protocol}, {workload}; lower is better)",
                                "Latency (ms)", targets, series,
                                {k: [_status(a, "p99_ms") for a in cells] for k in series}, log_if_spread=20,
                                colors=NEUTRAL))
    rss = [model.rss(t) for t in targets]
    if any(v is not None for v in rss):
        out.append(grouped_bars(d / "memory_peak_rss.png", "Peak RSS per server (lower is better)",
                                "Peak RSS (MiB)", targets, {"peak RSS": rss},
                                {"peak RSS": gaps}, group_colors=by_server))
    from .plots_protocols import protocol_charts

    out += protocol_charts(model, colors)
    if any(k[3] == "connect" for k in aggs):
        series, missing = {}, {}
        for p in protocols:
            if not any(k[1] == p and k[3] == "connect" for k in aggs):
                continue
            label = f"{p} handshakes/s" if p in ("https", "h2") else f"{p} conn/s"
            keys = [next((k for k in aggs if k[0] == t and k[1] == p and k[3] == "connect"), None) for t in targets]
            series[label] = [aggs[k].figure("conn_per_s") if k and aggs[k].ranked_for("conn_per_s") else None
                             for k in keys]
            missing[label] = [_status(aggs[k]) if k else "n/a" for k in keys]
        out.append(grouped_bars(d / "connection_setup.png", "Connection setup: a new connection per request",
                                "Rate (connections/s)", targets, series, missing, colors=NEUTRAL))
    if any(k[3] == "open" and a.status == "ok" for k, a in aggs.items()):
        out.append(latency_vs_throughput(d / "latency_vs_throughput.png", aggs, targets, protocols))
    if workloads and any(k[2] == workloads[0] and k[3] == "closed" and a.status == "ok" for k, a in aggs.items()):
        out.append(throughput_vs_concurrency(d / "throughput_vs_concurrency.png", aggs, targets, protocols, workloads[0]))
    return [p for p in out if p is not None]


def _latency_reference(aggs: dict, targets: list[str], protocol: str, workload: str) -> Optional[tuple]:
    """The highest concurrency at which every measured server is ranked for latency and not
    under-driven (else the highest)."""
    cs = sorted({k[4] for k in aggs if k[1] == protocol and k[2] == workload and k[3] == "closed"})
    if not cs:
        return None
    for c in reversed(cs):
        cells = [aggs.get((t, protocol, workload, "closed", c)) for t in targets]
        if not any(a is not None and a.status == "ok" and (a.starved or not a.ranked_for("p99_ms")) for a in cells):
            return protocol, workload, c
    return protocol, workload, cs[-1]


def throughput_vs_concurrency(path: Path, aggs: dict, targets: list[str], protocols: list[str], workload: str) -> Path:
    """One panel per protocol (same y axis), one line per server in its colour, min-max of
    repeats as error bars."""
    import math

    from matplotlib.ticker import FuncFormatter

    from .targets import PROTOCOL_TITLES

    plt = _plt()
    shown = [p for p in protocols if any(a.status == "ok" for t in targets for a in _closed(aggs, t, p, workload))]
    ncols = min(2, max(1, len(shown)))
    nrows = math.ceil(max(1, len(shown)) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.0 * ncols + 1.8, 3.8 * nrows + 0.6), squeeze=False, sharey=True)
    colors = server_colors(targets)
    handles: dict = {}
    top = 0.0
    for ax, protocol in zip(axes.flat, shown):
        all_cs: set = set()
        for t in targets:
            cells = sorted((a for a in _closed(aggs, t, protocol, workload) if a.status == "ok" and a.rps),
                           key=lambda a: a.load)
            if not cells:
                continue
            xs = [a.connections for a in cells]
            ys = [a.rps.median for a in cells]
            err = [[a.rps.median - a.rps.min for a in cells], [a.rps.max - a.rps.median for a in cells]]
            ax.errorbar(xs, ys, yerr=err, color=colors[t], linestyle="none", capsize=3)
            (line,) = ax.plot(xs, ys, label=t, color=colors[t], marker="o")
            bound = [(x, y) for x, y, a in zip(xs, ys, cells) if a.bound_for("rps")]
            if bound:  # a lower bound: the server's value is above the point
                ax.plot([x for x, _ in bound], [y for _, y in bound], linestyle="none", marker="^",
                        markersize=10, markerfacecolor="white", markeredgecolor=colors[t])
            handles.setdefault(t, line)
            all_cs.update(xs)
            top = max([top] + [a.rps.max for a in cells])
            for x, y, a in zip(xs, ys, cells):
                marks = ("‡" if a.starved else "") + ("≥" if a.bound_for("rps") else "") + ("" if a.ranked else "x")
                if marks:
                    ax.annotate(marks, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=9)
        ax.set_xscale("log")
        if all_cs:
            ax.set_xticks(sorted(all_cs))
            ax.set_xticklabels([str(c) for c in sorted(all_cs)])
            ax.minorticks_off()
        ax.set_title(f"{PROTOCOL_TITLES.get(protocol, protocol)} ({protocol})", fontsize=10)
        ax.set_xlabel("Concurrency (connections, log scale)")
        ax.set_ylabel("Throughput (req/s)")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}".replace(",", " ")))
        ax.grid(alpha=0.3)
    for ax in axes.flat:  # shared y: set once all panels are drawn, or a later panel is cut off
        ax.set_ylim(0, max(top, 1.0) * 1.08)
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    fig.suptitle(f"Throughput vs concurrency ({workload}; median, min-max of repeats; x = excluded; "
                 "open triangle ≥ = a lower bound, the generator was the limit)", fontsize=10)
    fig.legend(list(handles.values()), list(handles), loc="center left", bbox_to_anchor=(1 - 1.6 / fig.get_figwidth(), 0.5),
               fontsize=8)
    fig.tight_layout(rect=(0, 0, 1 - 1.7 / fig.get_figwidth(), 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def latency_vs_throughput(path: Path, aggs: dict, targets: list[str], protocols: list[str]) -> Path:
    """Open loop: corrected p99 (log axis) against achieved req/s, one line per server and protocol,
    each point labelled with its rate as a percent of the server's capacity."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, t in enumerate(targets):
        for protocol in protocols:
            cells = sorted((a for k, a in aggs.items() if k[0] == t and k[1] == protocol and k[3] == "open"
                            and a.status == "ok" and a.rps and a.p99_ms), key=lambda a: a.load)
            if not cells:
                continue
            xs, ys = [a.rps.median for a in cells], [a.p99_ms.median for a in cells]
            ax.plot(xs, ys, label=f"{t} {protocol}", color=PALETTE[i % len(PALETTE)],
                    linestyle=LINESTYLES.get(protocol, "-"), marker="o")
            for x, y, a in zip(xs, ys, cells):
                ax.annotate(f"{a.load_pct}%" + ("" if a.ranked else " x"), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    _plain_log_axis(ax)
    ax.set_xlabel("Achieved throughput (req/s)")
    ax.set_ylabel("p99 latency, corrected (ms, log scale)")
    ax.set_title("Open loop: p99 latency vs throughput (labels: % of capacity; x = excluded)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
