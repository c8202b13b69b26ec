"""report.html: ONE self-contained file that works offline, read as a dashboard - the executive
summary and the headline charts on the first screen; controls that pick a slice (protocol,
workload, concurrency, servers) for every chart and for the table of cells below them; then the
report's tables, and the comparison with another results folder when given one. The cells are
in the page once, as data (dashboard.py); its script (dashboard.js) draws the slice with
plotly.js, embedded inline from the plotly wheel.

    loadbench.html_report.write_html("reports/new", compare_with="reports/base")

A Content-Security-Policy meta tag forbids every network load (only inline scripts and styles,
data: images, and the flame graphs' SVG files from the page's own origin - file: URLs when
opened from the file system), so the page cannot fetch anything even if a library tried to.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import re
from pathlib import Path
from typing import Optional, Union

from .comparison import compare
from .dashboard import capacity_figure, comparison_figure, dashboard_data
from .document import baseline_of, render
from .executive_summary import executive_summary
from .model import Model
from .model import load as load_model
from .regression import HEADER, LEGEND, evaluate, rows_text

# object-src and frame-src 'self': the flame graphs are SVG files beside the page (profiles/),
# embedded as <object>s so that their click-zoom script runs; 'self' is the page's own origin
# (file: URLs for a page opened from the file system), and Chromium checks both directives for an
# <object> that holds a document. Without them no flame graph showed (issue 58).
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
    "object-src 'self'; frame-src 'self'"
)
PLOTLY_CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "toImageButtonOptions": {"format": "png"},
}

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1400px;
       padding: 0 24px 48px; color: #222; line-height: 1.45; }
h1 { margin-top: 24px; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 36px; }
nav a { margin-right: 14px; } code { background: #f3f3f3; padding: 1px 4px; border-radius: 3px; }
table { border-collapse: collapse; margin: 12px 0; font-size: 13px; display: block; overflow-x: auto; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; white-space: nowrap; }
th { background: #f6f6f6; } td:first-child, th:first-child, td:nth-child(2) { text-align: left; }
tr.worse td { background: #fdecea; } tr.better td { background: #eafaf1; }
.chart { margin: 8px 0 20px; min-width: 0; } .note { color: #555; font-size: 13px; }
.first { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 24px; align-items: start; }
.first h2 { margin-top: 8px; } p.summary { font-size: 13.5px; margin: 0 0 8px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(620px, 1fr)); gap: 12px; }
.controls { position: sticky; top: 0; z-index: 10; background: #fff; border-bottom: 1px solid #ddd;
            padding: 8px 0; display: flex; flex-wrap: wrap; gap: 14px; align-items: center; font-size: 14px; }
.controls .servers { display: flex; flex-wrap: wrap; gap: 10px; }
.swatch { display: inline-block; width: 11px; height: 11px; margin: 0 4px 0 2px; border-radius: 2px; }
@media (max-width: 1100px) { .first { grid-template-columns: 1fr; } }
.gate-FAIL { color: #c0392b; } .gate-PASS { color: #27ae60; } .gate-INCONCLUSIVE { color: #b9770e; }
"""


# -- the markdown of report.md as HTML (the subset report.py writes) ---------------------------
def _inline(text: str) -> str:
    text = html.escape(text, quote=False)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    return re.sub(
        r"!\[([^\]]*)\]\(([^)]*)\)", r"[\1]", text
    )  # no external images in an offline page


def _table(lines: list[str]) -> str:
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    head, body = cells[0], [r for r in cells[2:]]
    out = [
        "<table><thead><tr>"
        + "".join(f"<th>{_inline(c)}</th>" for c in head)
        + "</tr></thead><tbody>"
    ]
    out += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in body]
    return "\n".join(out + ["</tbody></table>"])


def markdown_to_html(text: str) -> str:
    """Headings, pipe tables, bullet lists, code fences and paragraphs with **bold** and `code`."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append("<pre>" + html.escape("\n".join(lines[i + 1 : j])) + "</pre>")
            i = j + 1
        elif line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")), 6)
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
            i += 1
        elif line.lstrip().startswith("|"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            out.append(_table(lines[i:j]))
            i = j
        elif line.lstrip().startswith(("- ", "* ")):
            j = i
            items = []
            while j < len(lines) and lines[j].strip() and not lines[j].lstrip().startswith("|"):
                if lines[j].lstrip().startswith(("- ", "* ")):
                    items.append(lines[j].lstrip()[2:])
                else:
                    items[-1] += " " + lines[j].strip()
                j += 1
            out.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in items) + "</ul>")
            i = j
        elif line.strip():
            j = i
            while (
                j < len(lines)
                and lines[j].strip()
                and not lines[j].startswith(("#", "|", "```", "- "))
            ):
                j += 1
            out.append(
                "<p>" + _inline(" ".join(x.strip() for x in lines[i : max(j, i + 1)])) + "</p>"
            )
            i = max(j, i + 1)
        else:
            i += 1
    return "\n".join(out)


# -- the comparison as an HTML table -----------------------------------------------------------
def comparison_html(frame, gate=None) -> str:
    verdicts = list(frame.verdict)
    rows = rows_text(frame)
    out = [
        "<table><thead><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
        + "</tr></thead><tbody>"
    ]
    for verdict, row in zip(verdicts, rows):
        cls = f' class="{verdict}"' if verdict in ("worse", "better") else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    out.append(f'<p class="note">{html.escape(LEGEND)}.</p>')
    if gate is not None and gate.thresholds:
        out.append(
            f'<p class="gate-{gate.word}"><strong>Gate {html.escape(" ".join(gate.thresholds))}: '
            f"{gate.word}</strong></p>"
        )
        out += [f"<p>FAIL {html.escape(x)}</p>" for x in gate.failures]
    return "\n".join(out)


# -- the page ----------------------------------------------------------------------------------
SCRIPT = Path(__file__).with_name("dashboard.js")
# The slice charts, in the order the page shows them: (id, what it is). Open loop, connection
# setup and timelines only when the results have such cells (and timelines long enough).
SLICE_CHARTS = (
    ("throughput", "Throughput"),
    ("latency_spectrum", "Latency percentiles"),
    ("cpu", "CPU per request"),
    ("allocs", "Heap allocations per request"),
    ("rss", "Peak RSS"),
    ("open_loop", "Open loop"),
    ("connection_setup", "Connection setup"),
    ("timelines", "Timelines"),
)


def _json(value) -> str:
    """JSON safe inside a <script> element (no '</' can close it early)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def _chart(chart_id: str) -> str:
    return (
        f'<div class="chart" data-chart="{chart_id}"><div id="plot-{chart_id}" class="plot"></div>'
        f'<p id="empty-{chart_id}" class="note empty"></p></div>'
    )


def _select(name: str, label: str, values: list, chosen, fmt=str) -> str:
    options = "".join(
        f'<option value="{html.escape(str(v))}"{" selected" if v == chosen else ""}>'
        f"{html.escape(fmt(v))}</option>"
        for v in values
    )
    return f'<label>{label} <select id="pick-{name}">{options}</select></label>'


def _controls(data: dict) -> str:
    parts = [
        _select("protocol", "Protocol", data["protocols"], data["protocols"][0]),
        _select("workload", "Workload", data["workloads"], data["workloads"][0]),
        _select("concurrency", "C", data["concurrencies"], data["concurrencies"][-1])
        + ' <label><input type="checkbox" id="pick-all-c"> every C in the table</label>',
    ]
    if data["open_loads"]:
        parts.append(
            _select(
                "open",
                "Open loop at",
                data["open_loads"],
                data["open_loads"][-1],
                lambda v: f"{v} %",
            )
        )
    servers = "".join(
        f'<label class="server"><input type="checkbox" id="pick-server-{i}" checked>'
        f'<span class="swatch" style="background:{data["colors"][s]}"></span>{html.escape(s)}</label>'
        for i, s in enumerate(data["servers"])
    )
    return f'<form id="controls" class="controls">{" ".join(parts)}<span class="servers">{servers}</span></form>'


def _summary_html(points) -> str:
    """The executive summary's paragraphs, each with its heading in bold, as in report.md."""
    return "".join(
        '<p class="summary">'
        + (f"<strong>{html.escape(p.heading)}:</strong> " if p.heading else "")
        + f"{html.escape(p.text)}</p>"
        for p in points
    )


def render_html(
    source: Union[str, Path, Model],
    compare_with: Union[str, Path, Model, None] = None,
    baseline: Optional[str] = None,
    thresholds: Optional[list] = None,
) -> str:
    """The HTML text of the report of ``source``: the executive summary and the headline charts
    first, then a dashboard (controls, a chart per metric for the chosen slice, the slice's
    cells as a table), then the report's tables. With ``compare_with`` (the *base*), the
    comparison of ``source`` (new) against it follows the summary."""
    m = source if isinstance(source, Model) else load_model(source)
    name = m.directory.resolve().name if m.directory else "results"
    base = baseline_of(m, baseline)
    data = dashboard_data(m) if m.aggs else None
    figures: dict = {}
    capacity = capacity_figure(m) if m.capacities() else None
    if capacity is not None:
        figures["capacity"] = json.loads(capacity.to_json())
    comparison = ""
    if compare_with is not None:
        frame = compare(compare_with, m)
        gate = evaluate(frame, thresholds or [])
        base_name = Path(str(compare_with)).name if not isinstance(compare_with, Model) else "base"
        figure = comparison_figure(frame, f"Change {name} vs {base_name}")
        if figure is not None:
            figures["comparison"] = json.loads(figure.to_json())
        comparison = (
            '<section id="comparison"><h2>Comparison</h2>'
            f"<p>Base: <code>{html.escape(str(compare_with))}</code>; new: <code>{html.escape(name)}</code>. "
            "Each metric per repeat, the repeat is the unit.</p>"
            + (_chart("comparison") if figure is not None else "")
            + comparison_html(frame, gate)
            + "</section>"
        )
    # the report's sections below the dashboard: its own summary is above, and the appendix's
    # per-cell tables are the dashboard's filterable table
    text = render(m, None, baseline=base)
    text = text[text.index("## Servers") :]
    text = text.split("## Appendix: every cell")[0]
    slice_charts = []
    if data is not None:
        have = {c["mode"] for c in data["cells"]}
        for chart_id, _ in SLICE_CHARTS:
            if chart_id == "open_loop" and "open" not in have:
                continue
            if chart_id == "connection_setup" and "connect" not in have:
                continue
            if chart_id == "allocs" and not data["allocations"]:
                continue
            if chart_id == "timelines" and data["timeline_intervals"] < data["min_timeline_points"]:
                continue
            slice_charts.append(chart_id)
    timeline_note = (
        f'<p class="note">No timeline chart: each measured window had {data["timeline_intervals"]} '
        f"interval(s), fewer than the {data['min_timeline_points']} a line needs (a sweep with longer "
        "windows, or a run with a shorter --interval, has them).</p>"
        if data is not None and "timelines" not in slice_charts
        else ""
    )
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    nav = " ".join(
        f'<a href="#{sid}">{title}</a>'
        for sid, title in (
            ("summary", "Summary"),
            ("comparison", "Comparison") if comparison else (None, None),
            ("explore", "Explore") if data is not None else (None, None),
            ("report", "Report"),
        )
        if sid
    )
    explore = (
        '<section id="explore"><h2>Explore one slice at a time</h2>'
        f"{_controls(data)}"
        f'<div class="grid">{"".join(_chart(c) for c in slice_charts)}</div>{timeline_note}'
        + (_chart("capacity") if "capacity" in figures else "")
        + '<h3>The cells of this slice</h3><p id="cells-caption" class="note"></p>'
        '<div id="cells-table"></div>'
        + (
            # profile = true: each server's flame graph at the slice's concurrency (its own SVG
            # beside the results, embedded as an object so that its click-zoom works)
            "<h3>Where the CPU goes: flame graphs of this slice</h3>"
            '<p id="flamegraphs-caption" class="note"></p><div id="flamegraphs"></div>'
            if any(c.get("flamegraph") for c in data["cells"])
            else ""
        )
        + "</section>"
        if data is not None
        else ""
    )
    script = (
        f'<script type="application/json" id="dashboard-data">{_json(data)}</script>'
        f'<script type="application/json" id="plotly-config">{_json(PLOTLY_CONFIG)}</script>'
        f'<script type="application/json" id="figures">{_json(figures)}</script>'
        f"<script>{_plotly_js()}</script><script>{SCRIPT.read_text(encoding='utf-8')}</script>"
        if data is not None
        else ""
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>loadbench report: {html.escape(name)}</title><style>{STYLE}</style></head><body>",
            f"<h1>loadbench report: {html.escape(name)}</h1>",
            f'<p class="note">Generated {generated} by loadbench from results.jsonl; one file, no network.</p>',
            f"<nav>{nav}</nav>",
            '<section id="summary" class="first"><div><h2>Executive summary</h2>'
            f"{_summary_html(executive_summary(m, base)) if m.aggs else ''}</div>"
            f"<div>{_chart('peak') + _chart('cpu_best') if data is not None else ''}</div></section>",
            comparison,
            explore,
            f'<section id="report"><h2>Report</h2>\n{markdown_to_html(text)}\n</section>',
            script,
            "</body></html>",
        ]
    )


def _plotly_js() -> str:
    """plotly.js from the plotly wheel, inline (the page loads nothing)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def write_html(
    results_dir,
    compare_with=None,
    baseline: Optional[str] = None,
    out: Union[str, Path, None] = None,
) -> Path:
    """Write ``results_dir``/report.html (or ``out``)."""
    results_dir = Path(results_dir)
    path = Path(out) if out else results_dir / "report.html"
    path.write_text(render_html(results_dir, compare_with, baseline), encoding="utf-8")
    return path
