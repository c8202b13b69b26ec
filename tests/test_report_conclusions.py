"""Conclusions a reader can trust (issue 42), from a hand-made sweep whose every answer is known:

    server  http plaintext (3 repeats, run order)       who limited it            h2c
    fast    140 000, 165 000, 150 000                   server (95 % busy) though  400 000-410 000
                                                        the generator was 97 %
    peer    148 000, 138 000, 160 000                   server (92 % busy)         115 000-125 000
    capped   98 000, 100 000, 102 000                   generator (98 %), server
                                                        85 % busy: [100 000, 117 647]
    jit         737,   1 019,   3 175                   server; only climbed: not steady
    slow     20 000,  21 000,  20 500                   server
    ghost    not installed (every cell skipped)

fast and peer are within noise (their repeats spread ±8 %, their 95 % intervals ±21 %); capped is a bound whose CPU ceiling (1 core / 8.5 us per
response) proves it below both; jit is marked and not ranked; ghost is named once and drawn
nowhere. Capacity: fast found 60 000 / 64 000 / 62 000 in three searches, capped is
generator-bound at 90 000 with the server's CPU ceiling at 117 000, slow found ~18 000.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from sweep_data import (
    SETTINGS,
    capacity_record,
    limited_result,
    record,
    search,
    table_rows,
)

from loadbench.core import protocols
from loadbench.report import bars, document, model
from loadbench.report.executive_summary import word_count
from loadbench.sweep import results_folder as results

SERVERS = ("fast", "peer", "capped", "jit", "slow", "ghost")
HTTP = {  # (rps, server busy, generator busy) per repeat, in run order
    "fast": [(140_000, 0.95, 0.97), (165_000, 0.95, 0.97), (150_000, 0.95, 0.97)],
    "peer": [(148_000, 0.92, 0.80), (138_000, 0.92, 0.80), (160_000, 0.92, 0.80)],
    "capped": [(98_000, 0.85, 0.98), (100_000, 0.85, 0.98), (102_000, 0.85, 0.98)],
    "jit": [(737, 1.0, 0.05), (1_019, 1.0, 0.05), (3_175, 1.0, 0.06)],
    "slow": [(20_000, 1.0, 0.2), (21_000, 1.0, 0.2), (20_500, 1.0, 0.2)],
}
H2C = {
    "fast": [(400_000, 0.95, 0.9), (410_000, 0.95, 0.9), (395_000, 0.95, 0.9)],
    "peer": [(120_000, 0.99, 0.5), (115_000, 0.99, 0.5), (125_000, 0.99, 0.5)],
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("conclusions")
    settings = copy.deepcopy(SETTINGS)
    settings["targets"] = [{"name": n, "kind": "command", "description": n} for n in SERVERS]
    settings["workloads"] = [w for w in settings["workloads"] if w["name"] == "plaintext"]
    settings.update(
        concurrencies=[25], protocols=["http", "h2c"], connection_setup=False, baseline="fast"
    )
    (d / results.SETTINGS_FILE).write_text(json.dumps(settings))
    (d / results.ENVIRONMENT_FILE).write_text(
        json.dumps({"host": "testhost", "cpu": {"logical_cores": 2}})
    )
    path = d / results.RESULTS_FILE
    for protocol, cells in (("http", HTTP), ("h2c", H2C)):
        for t, repeats in cells.items():
            for r, (rps, busy, gen) in enumerate(repeats):
                rec = record(t, protocol, "plaintext", "closed", 25, r, result=None)
                rec["result"] = limited_result(rps, busy, gen)
                results.append_record(path, rec)
    for p in ("http", "h2c"):
        for r in range(3):
            results.append_record(
                path,
                record(
                    "ghost",
                    p,
                    "plaintext",
                    "closed",
                    25,
                    r,
                    "skipped",
                    None,
                    "ghost is not installed",
                ),
            )
    for r, cap in enumerate((60_000, 64_000, 62_000)):
        # run order 70 000 (fail), 60 000 (pass), 65 000 (fail) ...: the chart must sort them
        found = search("capacity", [(cap, 2.0)], [(cap * 1.2, 40.0), (cap * 1.04, 15.0)])
        results.append_record(path, capacity_record("fast", r, found))
    for r in range(3):
        # two searches write the new `ceiling`; one is older and has it only in its step's limit
        bounded = search(
            "generator-bound",
            [(45_000, 1.0), (90_000, 2.0)],
            [],
            ceiling=None if r == 2 else 117_000,
            step_ceiling=117_000,
        )
        results.append_record(path, capacity_record("capped", r, bounded))
    for r, cap in enumerate((18_000, 18_500, 17_800)):
        results.append_record(
            path, capacity_record("slow", r, search("capacity", [(cap, 3.0)], [(cap * 1.05, 30.0)]))
        )
    return d


@pytest.fixture(scope="module")
def m(folder):
    return model.load(folder)


@pytest.fixture(scope="module")
def text(m):
    return document.render(m)


def paragraph(m, heading_end: str) -> str:
    return next(p.text for p in document.summary_points(m) if p.heading.endswith(heading_end))


def test_a_pair_inside_the_noise_says_within_noise_not_an_order(m):
    http = paragraph(m, "(http)")
    # beast-vs-nginx's shape: 150 000 against 148 000, repeats spread over ±8 % - not an order;
    # the "±" is the 95 % t interval of three replications (core/replication.py): ±21 %
    assert http.startswith("fast 150 000 ≈ peer 148 000 (±21 %)")
    assert m.peak_ranks("http")["fast"].text() == "1st-2nd (within noise of peer)"


def test_a_generator_bound_pair_whose_cpu_ceiling_proves_the_order_states_it(m, text):
    http = paragraph(m, "(http)")
    # capped's lower bound is open above, but its server's CPU caps it at 120 000 (the least CPU
    # per response of its repeats, 102 000 req/s at 85 % busy - report/ceilings.py): certainly
    # below fast's and peer's slowest repeats - stated as an order, not "open"
    assert "> capped at least 100 000 (at most 120 000 by CPU)" in http
    assert m.peak_ranks("http")["capped"].text() == "3"
    cell = m.aggs[("capped", "http", "plaintext", "closed", 25)]
    assert cell.generator_bound and cell.figure("rps").ceiling == pytest.approx(120_000, abs=1)
    rows = {r[1]: r for r in table_rows(text, "### HTTP/1.1 (http)")[1:]}
    assert rows["capped"][0] == "3" and rows["capped"][2] == "≥ 100 000 (≤ 120 000 by CPU)"


def test_both_sides_saturated_but_the_server_busy_is_the_servers_figure(m, text):
    """fast's generator was 97 % busy, but its server kept 95 % of its core busy: the server
    could not have answered much more - its figure, no §."""
    fast = m.aggs[("fast", "http", "plaintext", "closed", 25)]
    assert not fast.generator_bound and fast.bound_for("rps") is None
    assert [r["limit_by"] for r in m.rows if r["target"] == "fast"][:3] == ["server"] * 3
    rows = table_rows(text, "## HTTP/1.1 (http), plaintext, keep-alive")
    assert next(r for r in rows if r[1] == "fast")[2] == "150 000"  # no §, no ≥
    assert "Generator-bound cells (1, marked §):** capped http plaintext c=25" in text


def test_each_protocol_is_compared_like_with_like(m):
    # fast's h2c peak (400 000) never stands in for its HTTP/1.1 one
    assert "400 000" not in paragraph(m, "(http)")
    # with the step's ratio, the peak over the next server's (the tables' "This ÷ next")
    assert paragraph(m, "(h2c)") == "fast 400 000 (3.33x) > peer 120 000."


def test_an_unmeasured_server_is_named_once_and_listed_nowhere(m, text, tmp_path, folder):
    assert "ghost" not in m.listed and m.unmeasured() == {"ghost": "ghost is not installed"}
    summary = " ".join(p.text for p in document.summary_points(m))
    assert "ghost" not in summary and sum("ghost" in line for line in text.splitlines()) == 1
    assert "**ghost, all workloads, over http and h2c: not measured**" in text
    assert document.summary_points(m)[0].text.startswith("Peak req/s of 5 servers")
    pytest.importorskip("matplotlib")
    from loadbench.report import charts

    for name, fig in charts.chart_figures(m):
        if fig is None:
            continue
        labels = {t.get_text() for ax in fig.axes for t in ax.get_yticklabels() + ax.texts}
        labels |= {t.get_text() for leg in fig.legends for t in leg.get_texts()}
        assert "ghost" not in labels and "n/a" not in labels, name
        bars._plt().close(fig)


def test_the_summary_fits_on_one_screen_and_never_contradicts_itself(m, text):
    summary = text[text.index("## Executive summary") : text.index("The details are")]
    assert word_count(summary) <= 300
    assert "overall" not in summary and "highest figure" not in summary


def test_repeats_that_only_climb_are_marked_not_steady_and_not_ranked(m, text):
    jit = m.aggs[("jit", "http", "plaintext", "closed", 25)]
    assert jit.not_steady and not jit.ranked and m.peak("jit") is None
    assert "not steady (737 → 1 019 → 3 175 req/s)" in jit.exclusions()[0]
    row = next(
        r for r in table_rows(text, "## HTTP/1.1 (http), plaintext, keep-alive") if r[1] == "jit"
    )
    assert row[2] == "1 019 ↗"
    assert "jit" not in paragraph(m, "(http)")
    how = text[text.index("## How to read the tables") :]
    assert "A cell marked ↗ (not steady)" in how and "737 -> 1 019 -> 3 175" in how
    assert "Left out as not steady" in text and "jit http plaintext C = 25" in text


def test_capacity_is_the_median_of_the_searches_or_an_interval(m, text):
    fast = m.capacities()[("fast", "http")].figure
    assert fast == 62_000 and fast.bound is None and fast.spread == (60_000, 64_000)
    capped = m.capacities()[("capped", "http")].figure
    # the searches' own ceilings (117 000, the older one's read from its step's limit block) lie
    # below what the folder proves for capped over http: its closed-loop repeats' least CPU per
    # response, 120 000 req/s (report/ceilings.py) - the bound is read there
    assert capped == 90_000 and capped.bound == "lower" and capped.ceiling == pytest.approx(120_000)
    rows = {r[0]: r for r in table_rows(text, "## Capacity under the objective")[1:]}
    assert rows["fast"][2:4] == ["62 000", "60 000 - 64 000 (3)"]
    assert rows["capped"][2] == "≥ 90 000 (≤ 120 000 by CPU)"
    assert [r for r in rows] == ["capped", "fast", "slow"]  # highest first
    cap = next(p.text for p in document.summary_points(m) if p.heading.startswith("Capacity"))
    assert "median of 3 searches" in cap
    assert "capped at least 90 000 (at most 120 000 by CPU) (at least 1.45x) > fast 62 000" in cap


def test_only_a_generator_or_pool_bound_search_is_closed_by_its_cpu_ceiling():
    """A generator- or pool-bound search knows [L, U]: U the server's CPU ceiling where it
    passed. A contended one knows only L: its top passing step may be far below the capacity
    and steal inflates the CPU per response (a contended python-asyncio search's 'ceiling' of
    15 326 req/s lay below another search's found 21 743)."""
    from loadbench.report.capacity_cells import search_interval

    bounded = {"outcome": "generator-bound", "lower_bound": 50_000.0, "ceiling": 80_000.0}
    assert search_interval(bounded) == (50_000.0, 80_000.0)
    assert search_interval({**bounded, "outcome": "pool-bound"}) == (50_000.0, 80_000.0)
    assert search_interval({**bounded, "outcome": "contended"}) == (50_000.0, float("inf"))
    # a ceiling below the passing rate bounds nothing; a found capacity is a number
    assert search_interval({**bounded, "ceiling": 40_000.0}) == (50_000.0, float("inf"))
    assert search_interval({"outcome": "capacity", "capacity": 21_178.0}) == (21_178.0, 21_178.0)


def test_a_contended_search_is_left_out_of_a_capacity_its_clean_repeats_measured():
    """As a contended load cell is left out of the peaks: two clean searches found 21 178 and
    21 743, a third that steal disturbed passed only 8 198 - the figure is the clean ones'
    median and range, its upper end no CPU ceiling (none was measured), never 'at most 21 743
    by CPU'. With only contended searches, all of them count (flagged elsewhere)."""
    from loadbench.report.capacity_cells import CapacityCell

    found = [{"outcome": "capacity", "capacity": c} for c in (21_178.0, 21_743.0)]
    contended = {"outcome": "contended", "lower_bound": 8_198.0, "ceiling": 15_326.0}
    cell = CapacityCell("python-asyncio", "http", "plaintext", 25, "ok")
    cell.searches = [found[0], contended, found[1]]
    f = cell.figure
    assert float(f) == pytest.approx(21_460.5) and f.bound is None and f.ceiling is None
    assert f.spread == (21_178.0, 21_743.0) and len(cell.intervals()) == 2
    cell.searches = [contended, {**contended, "lower_bound": 9_000.0}]
    f = cell.figure
    assert float(f) == pytest.approx(8_599.0) and f.bound == "lower" and f.ceiling is None


def test_the_capacity_chart_draws_the_steps_sorted_by_rate_with_the_knee(m):
    pytest.importorskip("matplotlib")
    from loadbench.report import charts

    fig = charts.capacity_latency(m, bars.server_colors(m.listed))
    try:
        (ax,) = [a for a in fig.axes if a.get_visible() and a.get_title()]
        curves = {line.get_label(): line for line in ax.get_lines() if line.get_label() in m.listed}
        for name, line in curves.items():
            xs = list(line.get_xdata())
            assert xs == sorted(xs), name  # the curve, not the run order (72 000, 60 000, ...)
        stars = [line for line in ax.get_lines() if line.get_marker() == "*"]
        assert {round(float(line.get_xdata()[0])) for line in stars} == {62_000, 18_000}
        assert any(line.get_marker() == ">" for line in ax.get_lines())  # capped's lower bound
        assert fig.get_figwidth() * bars.DPI <= 1600
    finally:
        bars._plt().close(fig)


def test_averages_exist_for_every_measured_server_of_a_committed_sweep():
    """The 14-server report: no "no cell all servers share", and every server with a peak over
    a protocol has an average and a mean latency there."""
    folder = Path(__file__).resolve().parents[1] / "reports" / "2026-12-02-vm-peers"
    m = model.load(folder)
    text = document.render(m)
    assert "no cell all servers share" not in text
    for p in m.protocols:
        rows = table_rows(text, f"### {protocols.get(p).short} ({p})")
        assert rows[0][6:9] == ["Average req/s", "Mean latency (ms)", "p99 latency (ms)"]
        for r in rows[1:]:
            assert r[6] not in ("", "n/a") and r[7] not in ("", "n/a"), (p, r)
