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

from ..core import analysis
from ..core.errors import ConfigError
from ..sweep.targets import PROTOCOL_TITLES
from .charts import write_charts
from .markdown import LEGEND
from .memory import section as memory_section
from .model import Model
from .model import load as load_model
from .prose import environment_table, intro, known_limits, settings_table
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

__all__ = ["headline_lines", "render", "write_report"]


def render(source, charts: Optional[list[str]] = None, baseline: Optional[str] = None) -> str:
    """The markdown text of report.md for a results folder or a :class:`Model`; ratios divide
    by ``baseline`` (default: the sweep's baseline setting, else its first target)."""
    model = source if isinstance(source, Model) else load_model(source)
    settings, environment, rows, aggs = model.settings, model.environment, model.rows, model.aggs
    targets, workloads, protocols = model.targets, model.workloads, model.protocols
    name = model.directory.resolve().name if model.directory else "results"
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    parts = [f"# loadbench sweep report: {name}", ""]
    # the hold cells' records too: their servers and start times belong to the run
    parts += intro(generated, settings, environment, rows + model.hold_records)
    parts += [
        "## Settings",
        "",
        settings_table(settings, rows, aggs, model.hold_records),
        "",
        "## Environment",
        "",
        environment_table(environment, rows, settings),
        "",
    ]
    if not targets:
        raise ConfigError("the results hold no cells")
    base = baseline or settings.get("baseline") or targets[0]
    if base not in targets:
        raise ConfigError(f"baseline {base!r} is not a server of this sweep ({', '.join(targets)})")
    parts += [
        "## Summary",
        "",
        summary_table(model, base),
        "",
        summary_note(model, base),
        "",
        excluded_text(model),
        "",
    ]
    streams = {r["protocol"]: r.get("streams") or 1 for r in rows if r.get("status") == "ok"}
    parts += sections(model, streams)
    for protocol in protocols:
        for w in workloads:
            if any(k[1] == protocol and k[2] == w and k[3] == "closed" for k in aggs):
                title = PROTOCOL_TITLES.get(protocol, protocol)
                more = (
                    f", {streams[protocol]} streams per connection"
                    if streams.get(protocol, 1) > 1
                    else ""
                )
                parts += [
                    f"## {title} ({protocol}), {w}, keep-alive{more}",
                    "",
                    load_table(aggs, targets, protocol, w),
                    "",
                ]
    share = settings.get("contended_share") or analysis.CONTENDED_SHARE
    parts += [LEGEND.replace("{contended}", f"{100 * share:g}"), ""]
    multi = [w for w in workloads if sum(1 for k in aggs if k[2] == w and k[3] == "closed") > 0]
    if len(multi) > 1:
        parts += ["## Workload breakdown", ""]
        for protocol in protocols:
            text = workload_table(aggs, targets, protocol, multi)
            if text:
                parts += [f"### {protocol}", "", text, ""]
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
    parts += memory_section(model)
    if charts:
        parts += ["## Charts", ""] + [f"![{Path(c).stem.replace('_', ' ')}]({c})\n" for c in charts]
    parts += ["## Known limits", ""] + known_limits(settings, environment, rows, aggs) + [""]
    return "\n".join(parts)


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
