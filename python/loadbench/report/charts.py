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

from ..sweep.targets import PROTOCOL_TITLES
from .bars import LINESTYLES, NEUTRAL, PALETTE, _plain_log_axis, _plt, grouped_bars, server_colors
from .model import Aggregate, Model
from .model import load as load_model
from .protocol_charts import protocol_charts


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
    return [
        a
        for k, a in aggs.items()
        if k[0] == target and k[3] == "closed" and k[1] == protocol and k[2] == workload
    ]


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
    out.append(
        grouped_bars(
            d / "throughput_peak.png",
            "Peak throughput per server (best closed-loop cell)",
            "Throughput (req/s)",
            targets,
            {"peak req/s": peaks},
            {"peak req/s": gaps},
            group_colors=by_server,
        )
    )
    means = [model.average(t) for t in targets]
    out.append(
        grouped_bars(
            d / "throughput_average.png",
            f"Average throughput per server (mean over the {len(model.common())} ranked cells all share)",
            "Throughput (req/s)",
            targets,
            {"average req/s": means},
            {"average req/s": gaps},
            group_colors=by_server,
        )
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
        out.append(
            grouped_bars(
                d / "protocol_http_vs_https.png",
                "HTTP vs HTTPS throughput (keep-alive)",
                "Throughput (req/s)",
                targets,
                series,
                missing,
                colors=[NEUTRAL[0], NEUTRAL[1], NEUTRAL[3], NEUTRAL[2]],
            )
        )
    if len(workloads) > 1:
        series = {w: [model.peak(t, workload=w) for t in targets] for w in workloads}
        missing = {w: [model.gap(model.cells(t, workload=w)) for t in targets] for w in workloads}
        out.append(
            grouped_bars(
                d / "workloads.png",
                "Workload breakdown: peak throughput per workload",
                "Throughput (req/s)",
                targets,
                series,
                missing,
                colors=NEUTRAL,
            )
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
            "p50": [a.p50_ms.median if a and a.p50_ms else None for a in usable],
            "p99": [a.p99_ms.median if a and a.p99_ms else None for a in usable],
        }
        out.append(
            grouped_bars(
                d / "latency.png",
                f"Latency at C = {c} ({protocol}, {workload}; lower is better)",
                "Latency (ms)",
                targets,
                series,
                {k: [_status(a, "p99_ms") for a in cells] for k in series},
                log_if_spread=20,
                colors=NEUTRAL,
            )
        )
    rss = [model.rss(t) for t in targets]
    if any(v is not None for v in rss):
        out.append(
            grouped_bars(
                d / "memory_peak_rss.png",
                "Peak RSS per server (lower is better)",
                "Peak RSS (MiB)",
                targets,
                {"peak RSS": rss},
                {"peak RSS": gaps},
                group_colors=by_server,
            )
        )
    out += protocol_charts(model, colors)
    if any(k[3] == "connect" for k in aggs):
        series, missing = {}, {}
        for p in protocols:
            if not any(k[1] == p and k[3] == "connect" for k in aggs):
                continue
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
        out.append(
            grouped_bars(
                d / "connection_setup.png",
                "Connection setup: a new connection per request",
                "Rate (connections/s)",
                targets,
                series,
                missing,
                colors=NEUTRAL,
            )
        )
    if any(k[3] == "open" and a.status == "ok" for k, a in aggs.items()):
        out.append(latency_vs_throughput(d / "latency_vs_throughput.png", aggs, targets, protocols))
    if workloads and any(
        k[2] == workloads[0] and k[3] == "closed" and a.status == "ok" for k, a in aggs.items()
    ):
        out.append(
            throughput_vs_concurrency(
                d / "throughput_vs_concurrency.png", aggs, targets, protocols, workloads[0]
            )
        )
    return [p for p in out if p is not None]


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


def throughput_vs_concurrency(
    path: Path, aggs: dict, targets: list[str], protocols: list[str], workload: str
) -> Path:
    """One panel per protocol (same y axis), one line per server in its colour, min-max of
    repeats as error bars."""
    import math

    from matplotlib.ticker import FuncFormatter

    plt = _plt()
    shown = [
        p
        for p in protocols
        if any(a.status == "ok" for t in targets for a in _closed(aggs, t, p, workload))
    ]
    ncols = min(2, max(1, len(shown)))
    nrows = math.ceil(max(1, len(shown)) / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(6.0 * ncols + 1.8, 3.8 * nrows + 0.6), squeeze=False, sharey=True
    )
    colors = server_colors(targets)
    handles: dict = {}
    top = 0.0
    for ax, protocol in zip(axes.flat, shown):
        all_cs: set = set()
        for t in targets:
            cells = sorted(
                (a for a in _closed(aggs, t, protocol, workload) if a.status == "ok" and a.rps),
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
            (line,) = ax.plot(xs, ys, label=t, color=colors[t], marker="o")
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
            handles.setdefault(t, line)
            all_cs.update(xs)
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
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    fig.suptitle(
        f"Throughput vs concurrency ({workload}; median, min-max of repeats; x = excluded; "
        "open triangle ≥ = a lower bound, the generator was the limit)",
        fontsize=10,
    )
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="center left",
        bbox_to_anchor=(1 - 1.6 / fig.get_figwidth(), 0.5),
        fontsize=8,
    )
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
            cells = sorted(
                (
                    a
                    for k, a in aggs.items()
                    if k[0] == t
                    and k[1] == protocol
                    and k[3] == "open"
                    and a.status == "ok"
                    and a.rps
                    and a.p99_ms
                ),
                key=lambda a: a.load,
            )
            if not cells:
                continue
            xs, ys = [a.rps.median for a in cells], [a.p99_ms.median for a in cells]
            ax.plot(
                xs,
                ys,
                label=f"{t} {protocol}",
                color=PALETTE[i % len(PALETTE)],
                linestyle=LINESTYLES.get(protocol, "-"),
                marker="o",
            )
            for x, y, a in zip(xs, ys, cells):
                ax.annotate(
                    f"{a.load_pct}%" + ("" if a.ranked else " x"),
                    (x, y),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=7,
                )
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
