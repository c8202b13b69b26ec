"""The charts of seed report 001's sections (seed_sections.py): protocol comparison (peak and
average), workload breakdown per protocol (peak and average), mean latency by protocol and the
variant speedup. Panels of sorted horizontal bars (bars.panel_figure), one per server in its colour;
every value is a :class:`loadbench.report.model.Model` method.

Also the words every chart's title uses for what it fixes: the concurrencies the sweep measured
(:func:`concurrencies`, :func:`c_scope`) and a protocol's panel title (:func:`protocol_title`).
"""

from __future__ import annotations

from typing import Iterator

from ..core import analysis, protocols
from .bars import HPanel, hbar_figure, panel_figure, sort_panel
from .model import Model


def concurrencies(model: Model) -> dict[tuple[str, str], list[int]]:
    """{(protocol, workload): the concurrencies measured there}, over the closed-loop cells with
    a measurement (any server): the shape that decides lines over C or bars at one C."""
    out: dict[tuple[str, str], set] = {}
    for a in model.cells():
        if a.status == "ok":
            out.setdefault((a.protocol, a.workload), set()).add(a.load)
    return {k: sorted(v) for k, v in out.items()}


def c_scope(levels: list[int]) -> str:
    """What a title says of the concurrencies a figure spans: "C = 25", "C = 1, 10",
    "C = 1 to 500" ("every C" when no closed-loop cell measured anything)."""
    if not levels:
        return "every C"
    if len(levels) == 1:
        return f"C = {levels[0]}"
    if len(levels) <= 3:
        return "C = " + ", ".join(str(c) for c in levels)
    return f"C = {levels[0]} to {levels[-1]}"


def protocol_title(model: Model, protocol: str) -> str:
    """A protocol's panel title, with its streams per connection when HTTP/2 multiplexed."""
    streams = max(
        (r.get("streams") or 1 for r in model.rows if r["protocol"] == protocol), default=1
    )
    more = f", {streams} streams per connection" if streams > 1 else ""
    return protocols.chart(protocol).replace("\n", " ") + more


def _series(model: Model, value, protocol_of) -> tuple[dict, dict]:
    """{server: [value per group]}, {server: [gap per group]} for the groups protocol_of lists."""
    series, missing = {}, {}
    for t in model.listed:
        series[t] = [value(t, g) for g in protocol_of]
        missing[t] = [model.gap(model.cells(t, p)) for p in protocol_of]
    return series, missing


def _pair_gap(model: Model, get, target: str, h1: str, h2: str) -> str:
    """Why a server has no ratio: the gap of whichever protocol lacks its figure ("n/a" - no
    slot - when it does not serve that protocol at all)."""
    missing = h1 if get(target, h1) is None else h2
    return model.gap(model.cells(target, missing))


def protocol_figures(
    model: Model, colors: dict[str, str], per_cell_chart: bool = False
) -> Iterator[tuple[str, object]]:
    """(file name, Figure or None) of each chart of the seed-001 sections.

    ``per_cell_chart``: the caller draws every (protocol, workload) cell at its one concurrency
    (charts.throughput_at_concurrency); the workload breakdown by protocol would draw the very
    same bars again, labelled as a peak and an average of one cell, so it is left out."""
    scope = c_scope(sorted({c for cs in concurrencies(model).values() for c in cs}))
    h2 = [p for p in protocols.names(family="HTTP/2") if p in model.protocols]
    pairs = [
        (label, h1, h2p) for label, h1, h2p in model.pairs() if {h1, h2p} <= set(model.protocols)
    ]
    if h2 and pairs:
        servers = model.listed
        for kind, get, what in (
            ("peak", model.peak, "best ranked cell of each protocol"),
            ("average", model.average, "mean over the server's ranked cells of each protocol"),
        ):
            # the HTTP/2 figure over the HTTP/1.1 one, per server: what the protocol is worth to
            # it (the peaks themselves are throughput_peak.png's panels)
            panels = [
                sort_panel(
                    HPanel(
                        f"{'Cleartext' if label == 'cleartext' else label}: {h2p} ÷ {h1}",
                        servers,
                        {
                            "ratio": [
                                analysis.figure_ratio(get(t, h2p), get(t, h1)) for t in servers
                            ]
                        },
                        [_pair_gap(model, get, t, h1, h2p) for t in servers],
                        [colors[t] for t in servers],
                    )
                )
                for label, h1, h2p in pairs
            ]
            yield (
                f"protocol_{kind}.png",
                hbar_figure(
                    f"Protocol comparison: HTTP/2 {kind} throughput over HTTP/1.1's, per server "
                    f"(the same connections; {what}, every workload, {scope}; right of 1: HTTP/2 "
                    "is faster)",
                    f"HTTP/2 ÷ HTTP/1.1 {kind} req/s",
                    panels,
                    fmt=lambda v: f"{getattr(v, 'prefix', '')}{float(v):.2f}x",
                    reference=1.0,
                ),
            )
    # HTTP/3 beside the TCP protocols it is measured against (HTTP/1.1 and HTTP/2 over TLS)
    h3 = [p for p in ("https", "h2", "h3") if p in model.protocols]
    if "h3" in h3 and len(h3) > 1:
        for kind, get, what in (
            ("peak", model.peak, "best ranked cell"),
            ("average", model.average, "mean over each server's ranked cells"),
        ):
            series, missing = _series(model, get, h3)
            yield (
                f"protocol_h3_{kind}.png",
                panel_figure(
                    f"Protocol comparison: {kind} throughput over TLS, HTTP/3 vs TCP, closed "
                    f"loop ({what}, every workload, {scope})",
                    f"{kind.capitalize()} throughput (req/s)",
                    [("TLS", [protocols.chart(p) for p in h3], series, missing)],
                    colors,
                ),
            )
    workloads = [w for w in model.workloads if model.cells(workload=w)]
    if len(workloads) > 1 and len(model.protocols) > 1 and not per_cell_chart:
        for kind, what in (
            ("peak", "best ranked cell"),
            ("average", "mean over each server's ranked cells"),
        ):
            panels = []
            for p in model.protocols:
                series, missing = {}, {}
                for t in model.listed:
                    series[t] = [
                        model.peak(t, p, w) if kind == "peak" else model.average(t, p, workload=w)
                        for w in workloads
                    ]
                    missing[t] = [model.gap(model.cells(t, p, w)) for w in workloads]
                panels.append((protocol_title(model, p), workloads, series, missing))
            yield (
                f"workloads_{kind}.png",
                panel_figure(
                    f"Workload breakdown: {kind} throughput by protocol, closed loop ({what} "
                    f"over {scope})",
                    f"{kind.capitalize()} throughput (req/s)",
                    panels,
                    colors,
                ),
            )
    families = [
        (name, ps) for name, ps in protocols.families() if any(p in model.protocols for p in ps)
    ]
    if len(families) > 1:
        groups = [name for name, _ in families] + ["Overall"]
        sets = [ps for _, ps in families] + [None]
        series = {t: [model.mean_latency(t, ps) for ps in sets] for t in model.listed}
        missing = {t: [model.gap(model.cells(t, ps)) for ps in sets] for t in model.listed}
        yield (
            "latency_by_protocol.png",
            panel_figure(
                "Mean latency by protocol, closed loop (mean over each server's ranked cells, "
                f"every workload, {scope}; lower is better)",
                "Mean latency (ms)",
                [("", groups, series, missing)],
                colors,
                lower_is_better=True,
            ),
        )
    for base, variant in model.variants():
        groups, series, missing = [], {base: [], variant: []}, {base: [], variant: []}
        for p in model.protocols:
            for w in workloads:
                if model.peak(base, p, w) is None and model.peak(variant, p, w) is None:
                    continue
                groups.append(f"{p}\n{w}")
                for t in (base, variant):
                    series[t].append(model.peak(t, p, w))
                    missing[t].append(model.gap(model.cells(t, p, w)))
        yield (
            f"variant_{variant}_vs_{base}.png",
            panel_figure(
                f"{variant} vs {base}: peak throughput per protocol and workload, closed loop "
                f"(best ranked cell over {scope})",
                "Peak throughput (req/s)",
                [("", groups, series, missing)],
                colors,
                per_group=False,
            ),
        )
