"""The charts of seed report 001's sections (seed_sections.py): protocol comparison (peak and
average), workload breakdown per protocol (peak and average), mean latency by protocol and the
variant speedup. Panels of grouped bars (bars.panel_bars), one bar per server in its colour;
every value is a :class:`loadbench.report.model.Model` method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .bars import panel_bars
from .model import HTTP1_PROTOCOLS, HTTP2_PROTOCOLS, Model

NAMES = {
    "http": "HTTP/1.1\n(http)",
    "https": "HTTP/1.1 TLS\n(https)",
    "h2c": "HTTP/2\n(h2c)",
    "h2": "HTTP/2 TLS\n(h2)",
}


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
        for kind, get, what in (
            ("peak", model.peak, "Peak"),
            ("average", model.average, "Average"),
        ):
            panels = []
            for label, ps in pairs:
                series, missing = _series(model, get, ps)
                panels.append(
                    (
                        label.capitalize() if label == "cleartext" else label,
                        [NAMES[p] for p in ps],
                        series,
                        missing,
                    )
                )
            out.append(
                panel_bars(
                    d / f"protocol_{kind}.png",
                    f"Protocol comparison: {what.lower()} throughput, HTTP/1.1 vs HTTP/2",
                    f"{what} throughput (req/s)",
                    panels,
                    colors,
                )
            )
    workloads = [w for w in model.workloads if model.cells(workload=w)]
    if len(workloads) > 1 and len(model.protocols) > 1:
        for kind, what in (("peak", "Peak"), ("average", "Average")):
            panels = []
            for p in model.protocols:
                series, missing = {}, {}
                for t in model.targets:
                    series[t] = [
                        model.peak(t, p, w) if kind == "peak" else model.average(t, p, workload=w)
                        for w in workloads
                    ]
                    missing[t] = [model.gap(model.cells(t, p, w)) for w in workloads]
                panels.append((NAMES[p].replace("\n", " "), workloads, series, missing))
            out.append(
                panel_bars(
                    d / f"workloads_{kind}.png",
                    f"Workload breakdown: {what.lower()} throughput by protocol",
                    f"{what} throughput (req/s)",
                    panels,
                    colors,
                )
            )
    families = [
        (name, ps)
        for name, ps in (("HTTP/1.1", HTTP1_PROTOCOLS), ("HTTP/2", HTTP2_PROTOCOLS))
        if any(p in model.protocols for p in ps)
    ]
    if len(families) > 1:
        groups = [name for name, _ in families] + ["Overall"]
        sets = [ps for _, ps in families] + [None]
        series = {t: [model.mean_latency(t, ps) for ps in sets] for t in model.targets}
        missing = {t: [model.gap(model.cells(t, ps)) for ps in sets] for t in model.targets}
        out.append(
            panel_bars(
                d / "latency_by_protocol.png",
                "Mean latency by protocol (lower is better)",
                "Mean latency (ms)",
                [("", groups, series, missing)],
                colors,
            )
        )
    for base, variant in model.variants():
        groups, a, b = [], [], []
        for p in model.protocols:
            for w in workloads:
                if model.peak(base, p, w) is None and model.peak(variant, p, w) is None:
                    continue
                groups.append(f"{p}\n{w}")
                a.append(model.peak(base, p, w))
                b.append(model.peak(variant, p, w))
        out.append(
            panel_bars(
                d / f"variant_{variant}_vs_{base}.png",
                f"{variant} vs {base}: peak throughput",
                "Peak throughput (req/s)",
                [
                    (
                        "",
                        groups,
                        {base: a, variant: b},
                        {base: ["n/a"] * len(a), variant: ["n/a"] * len(b)},
                    )
                ],
                colors,
            )
        )
    return [p for p in out if p is not None]
