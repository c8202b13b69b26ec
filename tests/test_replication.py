"""Conclusions that survive a re-run (issue 57), with truth by construction:

- the interval arithmetic of core/replication.py on hand-computed numbers;
- a real sweep in blocks: every repeat of a server on a fresh process, each block's servers in
  a shuffled order recorded by its seed;
- A/A: a server listed twice reads ≈ itself (the report's A/A check holds);
- A/B: a twin made 10 % costlier per request is ordered below the original;
- a server whose speed changes from one fresh process to the next is not given a tight
  interval - where one process's back-to-back repeats would have given it one.

The servers are tests/fixed_cost_server.py: each request costs exactly COST_MS of the server's
CPU, so the true order and ratio are known.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import pytest

from loadbench import Sweep, Target
from loadbench.core import analysis, replication
from loadbench.report import aa_check
from loadbench.report.document import render
from loadbench.report.model import load as load_model
from loadbench.sweep import results_folder as results

SERVER = Path(__file__).with_name("fixed_cost_server.py")
TWO_CPUS = len(os.sched_getaffinity(0)) >= 2
PINS = {"server_cpus": [0], "generator_cpus": [1]} if TWO_CPUS else {}


# -- the arithmetic --------------------------------------------------------------------------
def test_the_t_interval_of_three_replications():
    # mean 151 666.7, sd 12 583, t(0.975, 2) = 4.303: half-width 31 262
    low, high = replication.mean_interval([140_000, 165_000, 150_000])
    assert (low, high) == pytest.approx((120_406, 182_927), abs=3)
    assert replication.mean_interval([5.0]) is None
    assert replication.t_quantile(2) == 4.303 and replication.t_quantile(100) < 2.0


def test_a_spread_in_blocks_carries_its_replications():
    spread = analysis.median_spread([100.0, 110.0, 90.0], blocks=[0, 1, 2])
    assert spread.blocks == {0: 100.0, 1: 110.0, 2: 90.0}
    low, high = spread.confidence
    assert low < 90 and high > 110  # wider than the min-max of three: a re-run's median lands in it
    assert analysis.median_spread([100.0], blocks=[0]).confidence is None


def test_pairing_within_blocks_orders_what_a_slow_minute_hides():
    # B is 10 % slower than A in every block, but the blocks themselves differ by 30 %: unpaired,
    # the intervals overlap; paired, the ratio 1.11 is certain
    a = {0: 100.0, 1: 130.0, 2: 80.0}
    b = {k: v / 1.11 for k, v in a.items()}
    assert replication.paired_verdict(a, b, higher_is_better=True) == "better"
    assert replication.paired_verdict(b, a, higher_is_better=True) == "worse"
    fa = analysis.Figure(100.0, spread=replication.mean_interval(a.values()), samples=a)
    fb = analysis.Figure(90.1, spread=replication.mean_interval(b.values()), samples=b)
    assert analysis.compare(fa, fb, True) == "better"
    unpaired_a = analysis.Figure(100.0, spread=replication.mean_interval(a.values()))
    unpaired_b = analysis.Figure(90.1, spread=replication.mean_interval(b.values()))
    assert analysis.compare(unpaired_a, unpaired_b, True) == "noise"
    ratio = analysis.figure_ratio(fa, fb)
    assert ratio.spread == pytest.approx((1.11, 1.11), rel=1e-3)


def test_a_difference_under_the_resolution_is_never_an_order():
    # 1 % apart in every block, with almost no noise: certain statistically, not an order
    a = {0: 101.0, 1: 101.2, 2: 100.9}
    b = {0: 100.0, 1: 100.1, 2: 100.0}
    assert replication.paired_verdict(a, b, True) == "noise"
    assert replication.paired_verdict({0: 1.0}, {0: 2.0}, True) is None  # one block: unpaired rule


# -- real sweeps -----------------------------------------------------------------------------
def fixed_cost(tmp: Path, name: str, cost_ms: float, *extra: str) -> Target:
    """A command target: the fixed-cost server on the sweep's {port}."""
    port_file = str(tmp / f"port-{name}")
    argv = [sys.executable, str(SERVER), port_file, str(cost_ms), "--listen", "{port}", *extra]
    return Target(name, kind="command", argv=argv, tree=False)


def sweep_of(targets: list[Target], out: Path, repeats: int, **settings) -> Path:
    sweep = Sweep(
        targets=targets,
        concurrencies=[4],
        protocols=["http"],
        repeats=repeats,
        duration=0.4,
        warmup=0.1,
        settle=False,
        # the noise is what these tests judge: a window other tests disturbed stays in (never
        # marked contended), and the rules must still hold (noisier is only wider)
        contended_share=1.0,
        contended_reruns=0,
        **PINS,
        **settings,
    )
    sweep.run(out, progress=False)
    return out


@pytest.fixture(scope="module")
def ab_sweep(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ab")
    # 1 ms and 1.1 ms of CPU per request: the fixed overhead of parsing and writing (~30 us) is
    # small beside it, so the true ratio is ~1.1 and a noisy machine cannot hide it
    targets = [fixed_cost(tmp, "a", 1.0), fixed_cost(tmp, "b", 1.1)]
    return sweep_of(targets, tmp / "out", repeats=5, twins=["a"])


def test_each_repeat_is_a_fresh_process_in_its_own_block(ab_sweep):
    records = results.read_records(ab_sweep / results.RESULTS_FILE)
    assert {r["target"] for r in records} == {"a", "a-again", "b"}
    assert all(r["status"] == "ok" for r in records), [r.get("error") for r in records]
    pids = [r["server"]["pid"] for r in records]
    assert len(set(pids)) == len(records) == 15  # one process per server and block
    blocks = [r["block"] for r in records]
    assert blocks == sorted(blocks) and set(blocks) == {0, 1, 2, 3, 4}  # block by block
    # the order within each block is the recorded seed's shuffle, the same on a re-plan
    url = "http://127.0.0.1:1/"
    sweep = Sweep(
        targets=[Target("a", kind="url", url=url), Target("b", kind="url", url=url)],
        concurrencies=[4],
        repeats=5,
        twins=["a"],
    )
    settings = results.ResultsFolder(ab_sweep).settings()
    assert settings["order_seed"] == sweep.order_seed and settings["blocks"] is True
    assert [r["target"] for r in records] == [c.target for c in sweep.run_order()]


def test_a_server_listed_twice_reads_as_itself(ab_sweep):
    model = load_model(ab_sweep)
    found = aa_check.verdicts(model)
    assert {(v.metric, v.protocol) for v in found} == {("rps", "http"), ("cpu_us", "http")}
    assert all(v.held for v in found), [(v.metric, v.verdict, v.ratio.spread) for v in found]
    text = render(model)
    assert "## A/A check" in text and "Held in all 2 comparisons" in text


def test_a_twin_ten_percent_costlier_is_ordered_below(ab_sweep):
    model = load_model(ab_sweep)
    # CPU per response is the server's own cost, exact whatever else the machine runs
    a, b = model.best_cpu("a", "http"), model.best_cpu("b", "http")
    assert analysis.compare(b, a, higher_is_better=False) == "worse"
    ratio = analysis.figure_ratio(b, a)
    assert 1.03 < ratio.spread[0] and ratio.spread[1] < 1.2  # the true 1.1 (less a fixed overhead)
    # its throughput: never ordered the wrong way round, and ordered below where no other
    # process took more than the sweep's usual contended share of the machine in any window
    verdict = analysis.compare(model.peak("b", "http"), model.peak("a", "http"), True)
    assert verdict in ("worse", "noise")
    records = results.read_records(ab_sweep / results.RESULTS_FILE)
    quiet = all(r["outside_share"] <= analysis.CONTENDED_SHARE for r in records)
    assert verdict == "worse" or not quiet


def test_a_server_whose_speed_changes_between_processes_gets_a_wide_interval(tmp_path):
    counter = tmp_path / "started"
    target = fixed_cost(tmp_path, "flip", 0.4, "--alternate", f"{counter}:0.8")
    # back to back on one process (the old way): three windows of one level, a tight range
    one = load_model(sweep_of([target], tmp_path / "one", repeats=3, blocks=False))
    counter.write_text("0")
    # in blocks: processes alternate between the two levels, and the interval holds both
    fresh = load_model(sweep_of([target], tmp_path / "fresh", repeats=3))
    # one process saw one level: its repeats stay within it (the levels are 2x apart)
    same = one.peak_cell("flip", "http").rps
    assert same.max < 1.5 * same.min
    # fresh processes saw both, and the interval holds both: no tight claim
    values = sorted(fresh.peak_cell("flip", "http").rps.values)
    assert values[-1] > 1.5 * values[0]
    wide = fresh.peak("flip", "http")
    low, high = wide.spread
    assert low <= values[0] and values[-1] <= high and math.isfinite(high)
    assert analysis.noise_share(wide) > analysis.noise_share(one.peak("flip", "http"))


# -- one capacity, agreed by every table -----------------------------------------------------
def test_a_capacity_is_never_stated_below_a_rate_the_open_loop_cells_passed():
    from loadbench.report.capacity_cells import CapacityCell, open_loop_evidence

    def row(target, rate, passed, block):
        return {
            "target": target,
            "protocol": "http",
            "mode": "open",
            "status": "ok",
            "load": 95,
            "target_rate": rate,
            "slo_passed": passed,
            "block": block,
        }

    rows = [row("go", r, True, b) for b, r in enumerate((86_000, 86_500, 85_900))]
    rows += [row("h2o", r, p, b) for b, (r, p) in enumerate(((107_000, True), (107_400, False)))]
    rows += [row("nim", 70_000, True, 0)]  # one replication proves nothing
    evidence = open_loop_evidence(rows)
    assert evidence == {("go", "http"): (85_900.0, 3)}
    search = {"outcome": "capacity", "capacity": 36_328.0, "first_failing": 38_000.0}
    cell = CapacityCell("go", "http", "plaintext", 25, "ok", searches=[search] * 3)
    assert float(cell.figure) == 36_328.0 and not cell.raised_by_open_loop
    cell.open_loop = evidence[("go", "http")]
    assert cell.raised_by_open_loop
    assert float(cell.figure) == 85_900.0 and cell.figure.bound == "lower"
    # a capacity above the open-loop evidence stands as found
    higher = CapacityCell(
        "go", "http", "plaintext", 25, "ok", searches=[{**search, "capacity": 90_000.0}]
    )
    higher.open_loop = evidence[("go", "http")]
    assert float(higher.figure) == 90_000.0 and higher.figure.bound is None


def test_the_pool_is_sized_from_littles_law_before_the_step():
    from loadbench.slo.pool import presized_pool

    # a server meeting p99 < 10 ms keeps its mean under 10 ms: rate x 10 ms in flight, x 1.25
    assert presized_pool(40_000, 25, latency_limit_s=0.01) == 500
    assert presized_pool(1_000, 25, latency_limit_s=0.01) == 25  # never fewer than C
    assert presized_pool(2_000_000, 25, latency_limit_s=0.01) == 1000  # never buried
    # without an objective: twice the server's own in-flight at its closed-loop peak
    assert presized_pool(150_000, 25, peak_rps=100_000) == 75
    assert presized_pool(150_000, 25) == 25
