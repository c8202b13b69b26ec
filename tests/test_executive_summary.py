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
from loadbench.report.document import render, summary_points
from loadbench.report.executive_summary import BOUND_WORDS, Point, terminal_text
from loadbench.report.model import load as load_model

REPORTS = Path(__file__).resolve().parent.parent / "reports"
COMMITTED = sorted(p.parent for p in REPORTS.glob("*/sweep.json"))
# a number as a sentence prints it: "607 300", "3.22x", "31.0 %", "0.20"; not the digits of
# a name ("h2c", "HTTP/1.1", "p99")
NUMBER = re.compile(r"(?<![\w/.~-])(\d{1,3}(?: \d{3})+|\d+)(\.\d+)?(x| %)?(?![\w/])")


def _expected(model, source):
    """The model figure a summary number claims to be, from the model's methods directly."""
    kind, *a = source
    peak, rss = model.peak, model.rss
    return {
        "peak": lambda: peak(*a),
        "average": lambda: model.average(a[0]),
        "mean_latency": lambda: model.mean_latency(a[0]),
        "best_cpu": lambda: model.best_cpu(a[0]),
        "rss": lambda: rss(a[0]),
        "share_of_leader": lambda: analysis.figure_ratio(peak(a[0]), peak(a[1])),
        "peak_ratio": lambda: analysis.figure_ratio(peak(a[0]), peak(a[1])),
        "rss_ratio": lambda: analysis.figure_ratio(rss(a[0]), rss(a[1])),
        "h2_h1": lambda: analysis.figure_ratio(peak(a[0], a[2]), peak(a[0], a[1])),
        "h3_h2": lambda: analysis.figure_ratio(peak(a[0], "h3"), peak(a[0], "h2")),
        "cells": lambda: float(len(model.common())),
        "bounded_cells": lambda: float(len(model.bounded(*a))),
        "average_bounded": lambda: float(model.average(a[0]).bounded),
        "outside_share": lambda: model.aggs[tuple(a)].outside_share,
        "servers": lambda: float(len(model.targets)),
        "bad_share": lambda: model.aggs[tuple(a)].bad_share,
        "capacity": lambda: _capacity(model, *a),
        "setting": lambda: _setting(model, *a),
    }[kind]()


def _capacity(model, target, protocol):
    cell = model.capacities()[(target, protocol)]
    if cell.capacity is not None:
        return analysis.Figure(cell.capacity.median)
    return analysis.Figure(cell.lower_bound, "lower")


def _setting(model, which, value):
    known = {
        "concurrency": {a.load for a in model.cells()},
        "load": {a.load for a in model.aggs.values()},
        "cores": {model.cores},
        "server_cpus": set(model.settings.get("server_cpus") or []),
        "generator_cpus": set(model.settings.get("generator_cpus") or []),
    }[which]
    return float(value) if value in known else None


def problems(model, points: list[Point], report: str) -> list[str]:
    """Every way the summary's numbers disagree with the model or the tables (empty: none)."""
    tables = report[report.index("## Servers") :]  # the report below the summary
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
    assert sum(len(p.numbers) for p in points) >= 20
    # the report opens with it, ahead of the settings and the tables
    assert report.index("## Executive summary") < report.index("## Settings")
    for p in points:
        assert p.text in report
    # seed 001's sentences, for this sweep's baseline (the embedded server)
    text = " ".join(p.text for p in points)
    assert "beast reached a peak throughput of" in text
    assert "Outperformed " in text and "peak RSS was" in text


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


def test_summary_with_a_baseline_behind_the_leader_says_its_share_and_the_marks(tmp_path):
    """py trails beast: its share of the leader's peak, beast's shares, and the qualifications
    (a generator-bound cell, an erroring cell, a failed cell) said in words."""
    model = load_model(write_results_dir(tmp_path / "r"))
    points = summary_points(model, "py")
    report = render(model, baseline="py")
    assert problems(model, points, report) == []
    text = "\n".join(p.text for p in points)
    share = _expected(model, ("share_of_leader", "py", "beast"))
    assert f"delivering at most {100 * share:.1f} % of beast's" in text  # beast's is a lower bound
    assert "Under-driven (‡" in text and "py http plaintext C = 10" in text
    assert "generator, not the server, was the limit" in text
    assert "Left out for errors" in text and "py http json C = 10 (30.0 % non-2xx/errors)" in text
    assert "Failed (the server died or never became ready): py https plaintext" in text
    headings = [p.heading for p in points]
    assert headings[0] == "What was measured" and headings[-1] == "What qualifies these sentences"


def test_report_summary_prints_on_the_terminal_and_writes_nothing(tmp_path, capsys):
    out = write_results_dir(tmp_path / "r")
    before = sorted(p.name for p in out.iterdir())
    assert main(["report", str(out), "--summary", "--baseline", "py"]) == 0
    printed = capsys.readouterr().out
    assert printed.strip() == terminal_text(summary_points(out, "py")).strip()
    assert printed.startswith("What was measured:") and "Peak throughput" in printed
    assert sorted(p.name for p in out.iterdir()) == before  # no report.md, no chart
    assert main(["report", str(out), "--summary", "--html"]) == 2
    assert "writes nothing" in capsys.readouterr().err
    assert main(["report", str(out), "--summary", "--baseline", "nobody"]) == 2
    assert "is not a server of this sweep" in capsys.readouterr().err
