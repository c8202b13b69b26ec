"""The executive summary (report.md's first section, report.html's first screen and
`loadbench report --summary`): sentences in seed report 001's words whose every number is the
report model's and one the report's tables show.

The committed default sweep's summary is regenerated from its raw data and each number checked
three ways: the sentence prints no number the summary did not record; each recorded number is
recomputed here from the model's own methods (not through the summary's code) with the same
digits and the words of its bound ("at least" for a lower bound); and its digits appear in the
report's tables below the summary. A tampered summary shows that the check can fail.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from sweep_data import write_results_dir

from loadbench.cli import main
from loadbench.core import analysis
from loadbench.report.document import finding_points, render, summary_points
from loadbench.report.executive_summary import BOUND_WORDS, Point, terminal_text, word_count
from loadbench.report.model import load as load_model
from loadbench.report.orders import capacity_figures

REPORTS = Path(__file__).resolve().parent.parent / "reports"
COMMITTED = sorted(p.parent for p in REPORTS.glob("*/sweep.json"))
# a number as a sentence prints it: "607 300", "3.22x", "31.0 %", "0.20"; not the digits of
# a name ("h2c", "HTTP/1.1", "p99")
NUMBER = re.compile(r"(?<![\w/.~-])(\d{1,3}(?: \d{3})+|\d+)(\.\d+)?(x| %)?(?![\w/])")


def _expected(model, source):
    """The model figure a summary number claims to be, from the model's methods directly."""
    kind, *a = source
    peak, rss = model.peak, model.rss

    def upper(value):
        return None if value is None else analysis.Figure(value, "upper")

    def left_out(flag):
        if flag == "failed":
            return float(sum(1 for c in model.cells() if c.status == "fail"))
        return float(sum(1 for c in model.excluded() if c.mode == "closed" and getattr(c, flag)))

    return {
        "peak": lambda: peak(*a),
        "ceiling": lambda: upper(peak(*a).ceiling),
        "noise": lambda: 100 * max(analysis.noise_share(peak(t, a[0])) for t in a[1:]),
        "average": lambda: model.average(*a),
        "average_cells": lambda: float(model.average(*a).cells),
        "mean_latency": lambda: model.mean_latency(*a),
        "best_cpu": lambda: model.best_cpu(*a),
        "rss": lambda: rss(a[0]),
        "share_of_leader": lambda: _ratio(peak, *a),
        "peak_ratio": lambda: _ratio(peak, *a),
        "rss_ratio": lambda: analysis.figure_ratio(rss(a[0]), rss(a[1])),
        "h2_h1": lambda: analysis.figure_ratio(peak(a[0], a[2]), peak(a[0], a[1])),
        "h3_h2": lambda: analysis.figure_ratio(peak(a[0], "h3"), peak(a[0], "h2")),
        "bounded_cells": lambda: float(len(model.bounded(*a))),
        "bounded_closed": lambda: float(sum(1 for c in model.bounded() if c.mode == "closed")),
        "left_out": lambda: left_out(a[0]),
        "outside_share": lambda: model.aggs[tuple(a)].outside_share,
        "servers": lambda: float(len(model.listed)),
        "bad_share": lambda: model.aggs[tuple(a)].bad_share,
        "capacity": lambda: model.capacities()[(a[0], a[1])].figure,
        "capacity_ceiling": lambda: upper(model.capacities()[(a[0], a[1])].figure.ceiling),
        "capacity_ratio": lambda: analysis.figure_ratio(
            capacity_figures(model, a[0])[a[1]], capacity_figures(model, a[0])[a[2]]
        ),
        "capacity_noise": lambda: (
            100 * max(analysis.noise_share(capacity_figures(model, a[0])[t]) for t in a[1:])
        ),
        "searches": lambda: float(max(len(c.searches) for c in model.capacities().values())),
        "setting": lambda: _setting(model, *a),
    }[kind]()


def _ratio(peak, top, bottom, protocol=None):
    if top == bottom:
        return analysis.Figure(1.0)
    return analysis.figure_ratio(peak(top, protocol), peak(bottom, protocol))


def _setting(model, which, value):
    known = {
        "concurrency": {a.load for a in model.cells()},
        "load": {a.load for a in model.aggs.values()},
        "cores": {model.cores},
        "server_cpus": set(model.settings.get("server_cpus") or []),
        "generator_cpus": set(model.settings.get("generator_cpus") or []),
        "repeats": {model.settings.get("repeats")},
        "climb": {analysis.NOT_STEADY_CLIMB},
    }[which]
    return float(value) if value in known else None


def problems(model, points: list[Point], report: str) -> list[str]:
    """Every way the summary's numbers disagree with the model or the tables (empty: none)."""
    # the report below the summary, without the findings' own sentences
    tables = report[report.index("## Servers") :]
    if "## Findings" in tables:
        start = tables.index("## Findings")
        tables = tables[:start] + tables[tables.index("\n## ", start + 1) :]
    out = []
    for p in points:
        recorded = {n.digits for n in p.numbers}
        for m in NUMBER.finditer(p.text):
            if m.group(0) not in recorded:
                out.append(f"{m.group(0)!r} in {p.text!r} is no recorded number")
        for n in p.numbers:
            want = _expected(model, n.source)
            if want is None:
                out.append(f"{n.source}: the model has no such figure")
                continue
            if abs(float(n.value) - float(want)) > 1e-9 * max(1.0, abs(float(want))):
                out.append(f"{n.source}: {float(n.value)} is not the model's {float(want)}")
            bound = getattr(want, "bound", None)
            if getattr(n.value, "bound", None) != bound:
                out.append(f"{n.source}: bound {getattr(n.value, 'bound', None)} != {bound}")
            if n.source[0] != "setting" and not n.text.startswith(BOUND_WORDS.get(bound, "")):
                out.append(f"{n.text!r}: a {bound} bound not said in words")
            if n.text not in p.text:
                out.append(f"{n.text!r} is not in {p.text!r}")
            if n.digits not in tables:
                out.append(f"{n.digits!r} ({n.source}) is in no table of the report")
    return out


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda p: p.name)
def test_committed_report_summary_matches_the_model_and_the_tables(folder):
    model = load_model(folder)
    points = summary_points(model)
    report = render(model)
    assert problems(model, points, report) == []
    assert problems(model, finding_points(model), report) == []
    # a default-shaped sweep states at least 20 numbers; a one-protocol study (variance-split:
    # one workload in three copies) has one paragraph and fewer
    assert sum(len(p.numbers) for p in points) >= (20 if len(model.protocols) > 1 else 5)
    # the report opens with it, ahead of the settings and the tables
    assert report.index("## Executive summary") < report.index("## Settings")
    for p in points:
        assert p.text in report
    # one paragraph per protocol the sweep measured, like with like; on one screen
    headings = [p.heading for p in points]
    for protocol in model.protocols:
        assert any(h.endswith(f"({protocol})") for h in headings), protocol
    summary = report[report.index("## Executive summary") : report.index("The details are")]
    assert word_count(summary) <= 300
    text = " ".join(p.text for p in points)
    assert "nearest peer" in text and "overall" not in text


def test_a_tampered_summary_is_caught(tmp_path):
    model = load_model(write_results_dir(tmp_path / "r"))
    points = summary_points(model, "py")
    report = render(model, baseline="py")
    assert problems(model, points, report) == []
    first = next(p for p in points if p.numbers and p.numbers[0].source[0] == "peak")
    n = first.numbers[0]
    wrong = dataclasses.replace(n, value=float(n.value) * 1.01)
    bad = [dataclasses.replace(first, numbers=[wrong] + first.numbers[1:])]
    assert any("is not the model's" in x for x in problems(model, bad, report))
    sneaky = [dataclasses.replace(first, text=first.text + " About 12 345 more.")]
    assert any("'12 345'" in x for x in problems(model, sneaky, report))
    missing = report.replace(n.digits, "?")
    assert any("is in no table" in x for x in problems(model, [first], missing))


def test_findings_with_a_baseline_behind_the_leader_say_where_it_stands_and_the_marks(
    tmp_path,
):
    """py trails beast: per protocol its peak against beast's (a ratio over beast's lower
    bound is an upper bound), and the qualifications (a generator-bound cell, an erroring cell,
    a failed cell) said in words."""
    model = load_model(write_results_dir(tmp_path / "r"))
    points = finding_points(model, "py")
    report = render(model, baseline="py")
    assert problems(model, points, report) == []
    assert problems(model, summary_points(model, "py"), report) == []
    text = "\n".join(p.text for p in points)
    ratio = _expected(model, ("peak_ratio", "py", "beast", "https"))
    assert ratio.bound == "upper" and f"at most {float(ratio):.2f}x beast's" in text
    assert "Under-driven (‡" in text and "py http plaintext C = 10" in text
    assert "generator, not the server, was the limit" in text
    assert "Left out for errors" in text and "py http json C = 10 (30.0 % non-2xx/errors)" in text
    assert "Failed (the server died or never became ready): py https plaintext" in text
    headings = [p.heading for p in points]
    assert headings[0].startswith("Peak throughput per protocol")
    assert headings[-1] == "What qualifies these sentences"
    # node was never measured (not installed): named once, under Known limits, nowhere else
    summary = " ".join(p.text for p in summary_points(model, "py"))
    assert "node" not in summary and "node" not in text
    assert sum("node" in line for line in report.splitlines()) == 1
    assert "**node, plaintext, over http and https: not measured**" in report


def test_report_summary_prints_on_the_terminal_and_writes_nothing(tmp_path, capsys):
    out = write_results_dir(tmp_path / "r")
    before = sorted(p.name for p in out.iterdir())
    assert main(["report", str(out), "--summary", "--baseline", "py"]) == 0
    printed = capsys.readouterr().out
    assert printed.strip() == terminal_text(summary_points(out, "py")).strip()
    assert printed.startswith("  - Peak req/s of 2 servers") and "HTTP/1.1 (http):" in printed
    assert sorted(p.name for p in out.iterdir()) == before  # no report.md, no chart
    assert main(["report", str(out), "--summary", "--html"]) == 2
    assert "writes nothing" in capsys.readouterr().err
    assert main(["report", str(out), "--summary", "--baseline", "nobody"]) == 2
    assert "is not a measured server of this sweep" in capsys.readouterr().err
