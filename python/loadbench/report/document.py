"""report.md from a results folder, shaped like the seed reports: how it was generated, the
settings and environment blocks (with the load gate and contended cells), the summary, the
seed-001 sections, per-protocol tables with the best *ranked* server per column in bold,
✗ / ⚑ / ‡ / § / † / FAIL marks with their legend, the connection-setup and open-loop tables,
memory per connection, the charts and the limits of what the run measured. Every figure comes
from one :class:`loadbench.report.model.Model`; this module only puts the sections in order.

    loadbench.report.write_report("reports/2026-12-01-vm")   # -> report.md (+ charts)
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Optional

from ..core import analysis, protocols
from ..core.errors import ConfigError
from .aa_check import section as aa_section
from .allocations import section as allocations_section
from .capacity import section as capacity_section
from .charts import write_charts
from .executive_summary import Point, executive_summary, markdown_lines, paragraph_lines
from .findings import findings
from .markdown import LEGEND
from .memory import section as memory_section
from .model import Model
from .model import load as load_model
from .phases import section as phases_section
from .profiles import section as profiles_section
from .prose import (
    environment_table,
    intro,
    known_limits,
    reading_notes,
    servers_measured,
    settings_table,
)
from .seed_sections import sections
from .tables import (
    connection_table,
    excluded_text,
    headline_lines,
    load_table,
    open_loop_table,
    summary_note,
    summary_table,
    workload_table,
)

__all__ = ["baseline_of", "headline_lines", "render", "summary_points", "write_report"]


# The charts the executive summary shows right under its sentences (the rest are in "Charts").
HEADLINE_CHARTS = ("throughput_peak.png", "protocol_peak.png")


def baseline_of(model: Model, baseline: Optional[str] = None) -> str:
    """The server ratios compare with: ``baseline``, else the sweep's setting, else the first
    target (the default sweep's is the embedded server)."""
    if not model.listed:
        raise ConfigError("the results hold no cells")
    setting = model.settings.get("baseline")
    # a configured baseline that was not measured (not installed here) falls back to the first
    # server that was; one asked for by name must be measured
    base = baseline or (setting if setting in model.listed else model.listed[0])
    if base not in model.listed:
        raise ConfigError(
            f"baseline {base!r} is not a measured server of this sweep ({', '.join(model.listed)})"
        )
    return base


def summary_points(source, baseline: Optional[str] = None) -> list[Point]:
    """The executive summary of a results folder or :class:`Model` (see executive_summary.py)."""
    model = source if isinstance(source, Model) else load_model(source)
    return executive_summary(model, baseline_of(model, baseline))


def finding_points(source, baseline: Optional[str] = None) -> list[Point]:
    """The findings under the summary (see findings.py)."""
    model = source if isinstance(source, Model) else load_model(source)
    return findings(model, baseline_of(model, baseline))


def render(source, charts: Optional[list[str]] = None, baseline: Optional[str] = None) -> str:
    """The markdown text of report.md for a results folder or a :class:`Model`; ratios divide
    by ``baseline`` (default: the sweep's baseline setting, else its first target).

    The first page answers who leads, by how much, on which protocol and with what
    qualification (the executive summary and the headline charts); then the settings, the
    machine and the seed-shaped tables; the per-cell tables are the appendix."""
    model = source if isinstance(source, Model) else load_model(source)
    settings, environment, rows, aggs = model.settings, model.environment, model.rows, model.aggs
    targets = model.listed
    name = model.directory.resolve().name if model.directory else "results"
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    base = baseline_of(model, baseline)
    charts = list(charts or [])
    headline = [c for c in HEADLINE_CHARTS if c in charts]
    parts = [f"# loadbench sweep report: {name}", ""]
    # the hold cells' records too: their servers and start times belong to the run
    parts += intro(generated, environment, rows + model.hold_records)
    parts += ["## Executive summary", ""] + paragraph_lines(executive_summary(model, base))
    parts += [_image(c) for c in headline]
    parts += [
        "The details are under [Findings](#findings); the marks in the tables (≥ and § for a lower "
        "bound, ⚑ contended, ↗ not steady, ✗ errors, ‡ under-driven) are explained in [How to read "
        "the tables](#how-to-read-the-tables); every cell of the sweep is in the "
        "[appendix](#appendix-every-cell).",
        "",
        "## Servers",
        "",
    ]
    parts += servers_measured(settings, rows + model.hold_records)
    parts += [
        "## Settings",
        "",
        settings_table(settings, rows, aggs, model.hold_records),
        "",
        "## Environment",
        "",
        environment_table(environment, rows, settings),
        "",
        "## Summary",
        "",
        summary_table(model, base),
        "",
        summary_note(model, base),
        "",
        excluded_text(model),
        "",
    ]
    parts += aa_section(model)
    parts += [
        "## Findings",
        "",
    ]
    parts += markdown_lines(findings(model, base)) + [""]
    streams = {r["protocol"]: r.get("streams") or 1 for r in rows if r.get("status") == "ok"}
    parts += sections(model, streams, base)
    if any(k[3] == "connect" for k in aggs):
        parts += [
            "## Connection setup",
            "",
            "No keep-alive: every request pays a fresh connection. For http that is the "
            "accept/teardown rate; for https it is full TLS handshakes per second (no session "
            "resumption), the cost a short-lived-connection deployment pays and the keep-alive "
            "tables above amortise to nothing. Marks as in the tables above.",
            "",
            connection_table(aggs, targets),
            "",
        ]
    if any(k[3] == "open" for k in aggs):
        parts += [
            "## Open loop: latency at fixed rates",
            "",
            "Requests sent at a constant rate, a fixed fraction of each server's best closed-loop req/s "
            f"({settings.get('open_loop_workload', 'plaintext')}, same protocol) measured earlier in this "
            "sweep, over the fixed connection count of that best cell (a request that finds every "
            "connection busy waits, and the wait counts). Latency runs from each request's intended send time, so a stalled server is charged "
            "for the requests that waited (coordinated omission corrected); the last column is the "
            "uncorrected p99 from the actual send, for comparison. A server that cannot keep up shows an "
            "achieved rate below its target and a corrected tail far above the uncorrected one.",
            "",
            open_loop_table(aggs, targets),
            "",
        ]
    parts += phases_section(model)
    parts += capacity_section(model)
    parts += memory_section(model)
    parts += allocations_section(model)
    parts += profiles_section(model)
    rest = [c for c in charts if c not in headline]
    if rest:
        parts += ["## Charts", ""] + [_image(c) for c in rest]
    parts += ["## Known limits", ""] + known_limits(settings, environment, rows, aggs) + [""]
    parts += _appendix(model, streams)
    return "\n".join(parts)


def _image(name: str) -> str:
    return f"![{Path(name).stem.replace('_', ' ')}]({name})\n"


def _appendix(model: Model, streams: dict[str, int]) -> list[str]:
    """How to read the tables, then every cell: a table per protocol and workload with every
    row the model has (req/s, percentiles, CPU, in-flight, errors), and the workloads side by
    side per protocol and concurrency."""
    aggs, targets, workloads = model.aggs, model.listed, model.workloads
    parts = ["## How to read the tables", ""] + reading_notes()
    share = model.settings.get("contended_share") or analysis.CONTENDED_SHARE
    parts += [LEGEND.replace("{contended}", f"{100 * share:g}"), ""]
    parts += [
        "## Appendix: every cell",
        "",
        "Each table is one protocol and workload, keep-alive; a column per server and concurrency, "
        "the median of the repeats with the min-max spread; the marks as above.",
        "",
    ]
    for protocol in model.protocols:
        for w in workloads:
            if any(k[1] == protocol and k[2] == w and k[3] == "closed" for k in aggs):
                title = protocols.title(protocol)
                more = (
                    f", {streams[protocol]} streams per connection"
                    if streams.get(protocol, 1) > 1
                    else ""
                )
                parts += [
                    f"### {title} ({protocol}), {w}, keep-alive{more}",
                    "",
                    load_table(aggs, targets, protocol, w),
                    "",
                ]
    multi = [w for w in workloads if sum(1 for k in aggs if k[2] == w and k[3] == "closed") > 0]
    if len(multi) > 1:
        parts += ["### Workload breakdown per concurrency", ""]
        for protocol in model.protocols:
            text = workload_table(aggs, targets, protocol, multi)
            if text:
                parts += [f"#### {protocol}", "", text, ""]
    return parts


def write_report(results_dir, charts: bool = True, baseline: Optional[str] = None) -> Path:
    """Write report.md (and, unless charts=False, the PNG charts) into ``results_dir``; both
    are drawn from one :class:`loadbench.model.Model` of the folder."""
    results_dir = Path(results_dir)
    model = load_model(results_dir)
    names: list[str] = []
    if charts:
        names = [p.name for p in write_charts(model)]
    text = render(model, names, baseline=baseline)
    out = results_dir / "report.md"
    out.write_text(text, encoding="utf-8")
    return out
