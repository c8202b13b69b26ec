"""report.html: ONE self-contained file that works offline - the report's tables and
interactive charts (plotly; plotly.js embedded inline from the plotly wheel), and the
comparison with another results folder when given one.

    loadbench.html_report.write_html("reports/new", compare_with="reports/base")

A Content-Security-Policy meta tag forbids every network load (only inline scripts and styles
and data: images), so the page cannot fetch anything even if a library tried to.
"""

from __future__ import annotations

import datetime as _dt
import html
import re
from pathlib import Path
from typing import Optional, Union

from . import html_charts
from .comparison import compare
from .document import render
from .model import Model
from .model import load as load_model
from .regression import HEADER, LEGEND, evaluate, rows_text

CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
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
.chart { margin: 8px 0 28px; } .note { color: #555; font-size: 13px; }
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
def render_html(
    source: Union[str, Path, Model],
    compare_with: Union[str, Path, Model, None] = None,
    baseline: Optional[str] = None,
    thresholds: Optional[list] = None,
) -> str:
    """The HTML text of the report of ``source``; with ``compare_with`` (the *base*), a
    comparison section of ``source`` (new) against it comes first."""
    m = source if isinstance(source, Model) else load_model(source)
    name = m.directory.resolve().name if m.directory else "results"
    charts = html_charts.all_charts(m)
    sections: list[tuple[str, str, str]] = []  # (id, title, html)
    if compare_with is not None:
        frame = compare(compare_with, m)
        gate = evaluate(frame, thresholds or [])
        base_name = Path(str(compare_with)).name if not isinstance(compare_with, Model) else "base"
        chart = html_charts.comparison(frame, f"Change {name} vs {base_name}")
        body = (
            f"<p>Base: <code>{html.escape(str(compare_with))}</code>; new: <code>{html.escape(name)}</code>. "
            "Each metric per repeat, the repeat is the unit.</p>" + comparison_html(frame, gate)
        )
        if chart is not None:
            charts.insert(0, chart)
        sections.append(("comparison", "Comparison", body))
    sections.append(("charts", "Charts", ""))
    sections.append(("report", "Report", markdown_to_html(render(m, None, baseline=baseline))))
    first = True
    chart_html = []
    for c in charts:
        fragment = c.figure.to_html(
            full_html=False, include_plotlyjs=first, div_id=f"chart-{c.id}", config=PLOTLY_CONFIG
        )
        first = False
        chart_html.append(
            f'<div class="chart" data-chart="{c.id}"><h3>{html.escape(c.title)}</h3>'
            f'<p class="note">{html.escape(c.note)}</p>{fragment}</div>'
        )
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    nav = " ".join(f'<a href="#{sid}">{title}</a>' for sid, title, _ in sections)
    body = []
    for sid, title, content in sections:
        if sid == "charts":
            content = "\n".join(chart_html)
        body.append(f'<section id="{sid}"><h2>{title}</h2>\n{content}\n</section>')
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
            *body,
            "</body></html>",
        ]
    )


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
