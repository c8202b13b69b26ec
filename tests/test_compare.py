"""loadbench.compare and the `loadbench compare` gate on hand-made results (no sockets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import pytest

pytest.importorskip("scipy")

from sweep_data import record, result_dict

from loadbench.cli import main
from loadbench.core.errors import ConfigError
from loadbench.report import comparison, regression
from loadbench.sweep import results_folder as rs

# (rps, p50_us, p99_us, cpu_s) per repeat: the same distribution, interleaved between sides
SAME_A = [
    (10000, 90, 200, 0.40),
    (10300, 92, 210, 0.41),
    (9800, 89, 195, 0.39),
    (10100, 91, 205, 0.40),
    (9900, 90, 198, 0.40),
    (10200, 91, 202, 0.41),
]
SAME_B = [
    (10050, 91, 201, 0.40),
    (9850, 90, 199, 0.40),
    (10250, 92, 207, 0.41),
    (9950, 89, 196, 0.39),
    (10150, 91, 204, 0.41),
    (10000, 90, 200, 0.40),
]
# 30 % fewer req/s, p99 up by half: a large effect every repeat shows
SLOW = [(rps * 0.7, p50 * 1.4, p99 * 1.5, cpu) for rps, p50, p99, cpu in SAME_B]


def write_side(
    directory: Path,
    repeats: list[tuple],
    *,
    mode: str = "closed",
    saturated: bool = False,
    shed: float = 0.0,
    target_rate: Optional[float] = None,
    status: str = "ok",
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / rs.RESULTS_FILE
    for i, (rps, p50, p99, cpu) in enumerate(repeats):
        result = result_dict(rps, 1e6 / rps, p50, p99, cpu, saturated=saturated, shed=shed)
        rec = record(
            "beast",
            "http",
            "plaintext",
            mode,
            10,
            i,
            status=status,
            result=result if status == "ok" else None,
            error=None if status == "ok" else "boom",
        )
        if mode == "open":
            rec.update(load_pct=80, connections=10)
            result["rate"] = {"target": target_rate, "achieved": rps}
        rs.append_record(path, rec)
    return directory


def by_metric(frame) -> dict[str, dict]:
    return {r["metric"]: r for r in frame.to_dict("records")}


def test_exact_u_distribution_matches_scipy():
    from scipy.stats import mannwhitneyu

    cdf = comparison.u_cdf(4, 4)
    assert cdf[0] == pytest.approx(1 / 70) and cdf[-1] == pytest.approx(1.0) and len(cdf) == 17
    a, b = [1.0, 5.0, 7.0, 9.0, 11.0], [2.0, 3.0, 4.0, 6.0, 8.0, 10.0]
    u = mannwhitneyu(a, b, method="exact").statistic  # U of the first sample
    cdf = comparison.u_cdf(5, 6)
    mine = min(1.0, 2 * min(cdf[int(u)], 1 - (cdf[int(u) - 1] if u >= 1 else 0.0)))
    assert mine == pytest.approx(comparison.mann_whitney_p(a, b))


def test_hodges_lehmann_interval_and_its_exact_coverage():
    shift, lo, hi, level = comparison.hodges_lehmann([1, 2, 3, 4], [11, 12, 13, 14])
    assert (shift, lo, hi) == (10, 7, 13)  # 4 + 4: only the widest interval covers >= 95 %
    assert level == pytest.approx(1 - 2 / 70)
    assert comparison.hodges_lehmann([1, 2, 3], [4, 5, 6]) is None  # 3 + 3: 90 % at best
    shift, lo, hi, level = comparison.hodges_lehmann(list(range(8)), [x + 5 for x in range(8)])
    assert shift == 5 and lo < 5 < hi and 0.95 <= level < 0.97


def test_same_distribution_is_not_significant(tmp_path):
    frame = comparison.compare(
        write_side(tmp_path / "a", SAME_A), write_side(tmp_path / "b", SAME_B)
    )
    rows = by_metric(frame)
    assert set(rows) == {"rps", "cpu", "p50", "p99", "p99.9"}
    assert {r["verdict"] for r in rows.values()} == {"~"}
    rps = rows["rps"]
    assert rps["n_base"] == rps["n_new"] == 6
    assert rps["base"] == pytest.approx(10050) and rps["new"] == pytest.approx(
        10025
    )  # analysis.median
    assert rps["ci_low_pct"] < 0 < rps["ci_high_pct"] and rps["ci_level"] >= 0.95
    assert rps["p_value"] > 0.05
    assert (
        main(
            [
                "compare",
                str(tmp_path / "a"),
                str(tmp_path / "b"),
                "--fail",
                "rps:-5%",
                "--fail",
                "p99:+10%",
            ]
        )
        == 0
    )


def test_clearly_slower_build_is_flagged_and_fails_the_gate(tmp_path, capsys):
    base, new = write_side(tmp_path / "a", SAME_A), write_side(tmp_path / "b", SLOW)
    rows = by_metric(comparison.compare(base, new))
    assert rows["rps"]["verdict"] == "worse" and rows["rps"]["change_pct"] == pytest.approx(
        -30.2, abs=0.5
    )
    assert rows["rps"]["p_value"] < 0.01 and rows["rps"]["ci_high_pct"] < -20
    # the same CPU seconds over 30 % fewer responses: 43 % more CPU per request
    assert rows["p99"]["verdict"] == "worse" and rows["cpu"]["change_pct"] == pytest.approx(
        43, abs=1
    )
    assert main(["compare", str(base), str(new), "--fail", "rps:-5%", "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["gate"]["status"] == 1 and "beyond rps:-5%" in out["gate"]["failures"][0]
    # beyond the effect: a 40 % threshold is not crossed by a 30 % drop
    assert main(["compare", str(base), str(new), "--fail", "rps:-40%"]) == 0
    assert (
        main(["compare", str(new), str(base), "--fail", "rps:-5%", "--fail", "p99:+10%"]) == 0
    )  # faster
    capsys.readouterr()
    assert main(["compare", str(base), str(new), "--fail", "p99:+10%", "--format", "markdown"]) == 1
    text = capsys.readouterr().out
    assert "| beast http plaintext C=10 | p99 (ms) |" in text and "**Gate p99:+10%: FAIL**" in text


def test_three_repeats_are_too_few_and_the_gate_is_inconclusive(tmp_path, capsys):
    base, new = write_side(tmp_path / "a", SAME_A[:3]), write_side(tmp_path / "b", SLOW[:3])
    rows = by_metric(comparison.compare(base, new))
    assert rows["rps"]["verdict"] == "too few repeats" and rows["rps"]["p_value"] is None
    assert rows["rps"]["change_pct"] < -25  # the medians are still shown
    assert main(["compare", str(base), str(new), "--fail", "rps:-5%"]) == 2
    out = capsys.readouterr().out
    assert "too few repeats" in out and "INCONCLUSIVE" in out


def test_open_loop_compares_only_at_the_target_rate(tmp_path):
    base = write_side(tmp_path / "a", SAME_A, mode="open", target_rate=10000)
    new = write_side(tmp_path / "b", SAME_B, mode="open", target_rate=10000)
    assert {r["verdict"] for r in comparison.compare(base, new).to_dict("records")} == {"~"}
    missed = write_side(tmp_path / "c", SLOW, mode="open", target_rate=10000)  # achieved ~70 %
    rows = by_metric(comparison.compare(base, missed))
    assert rows["p99"]["verdict"] == "not comparable" and "100.5 %, 70.2 %" in rows["p99"]["note"]
    assert main(["compare", str(base), str(missed), "--fail", "p99:+10%"]) == 2


def test_flagged_cells_are_shown_and_make_the_gate_inconclusive(tmp_path):
    base = write_side(tmp_path / "a", SAME_A)
    bound = write_side(tmp_path / "b", SLOW, saturated=True)
    rows = by_metric(comparison.compare(base, bound))
    # the new side is generator-bound: its req/s is a lower bound below the base, so the new
    # server may be as fast - uncertain; its p99 measured the generator - flagged
    assert rows["rps"]["verdict"] == "uncertain" and rows["rps"]["verdict_figures"] == "worse"
    assert rows["rps"]["bounds"].startswith("new is a lower bound") and rows["rps"]["flags"] == ""
    assert rows["p99"]["flags"] == "new: generator-bound"
    assert main(["compare", str(base), str(bound), "--fail", "rps:-5%"]) == 2
    assert main(["compare", str(base), str(bound), "--fail", "rps:-5%", "--judge-flagged"]) == 1
    assert main(["compare", str(base), str(bound), "--fail", "p99:+10%"]) == 2
    # the new build answers 5 % 503s: a regression whatever its speed
    dirty = write_side(tmp_path / "c", SAME_B, shed=0.05)
    assert main(["compare", str(base), str(dirty), "--fail", "rps:-5%"]) == 1
    failed = write_side(tmp_path / "d", SAME_B, status="fail")
    assert by_metric(comparison.compare(base, failed))["rps"]["verdict"] == "FAIL in new"
    assert main(["compare", str(base), str(failed), "--fail", "rps:-5%"]) == 1


FAST = [
    (rps * 6, p50, p99, cpu) for rps, p50, p99, cpu in SAME_A
]  # a server 6x beyond the generator


def test_below_a_base_lower_bound_is_a_certain_regression(tmp_path, capsys):
    """The CI gate on a fast server: the base sweep is generator-bound (§) at ~60 000 req/s; a new
    build that answers 10x slower is a regression for sure - the base server did at least 60 000."""
    base = write_side(tmp_path / "a", FAST, saturated=True)
    slow = write_side(
        tmp_path / "b", [(rps / 10, p50 * 10, p99 * 10, cpu) for rps, p50, p99, cpu in FAST]
    )
    rows = by_metric(comparison.compare(base, slow))
    assert rows["rps"]["verdict"] == "worse" and rows["rps"]["bounds"].startswith(
        "base is a lower bound"
    )
    assert main(["compare", str(base), str(slow), "--fail", "rps:-5%"]) == 1
    out = capsys.readouterr().out
    assert (
        "FAIL" in out and "certain regression" in out and "≥ 60 300" in out
    )  # the base median, as a bound
    # a new build above the base lower bound: the base server may have been as fast - uncertain
    faster = write_side(tmp_path / "c", [(rps * 1.2, p50, p99, cpu) for rps, p50, p99, cpu in FAST])
    rows = by_metric(comparison.compare(base, faster))
    assert rows["rps"]["verdict"] == "uncertain" and rows["rps"]["verdict_figures"] == "better"
    assert main(["compare", str(base), str(faster), "--fail", "rps:-5%"]) == 2
    # both sides generator-bound: the order is open whatever the figures
    same = write_side(tmp_path / "d", FAST, saturated=True)
    assert by_metric(comparison.compare(base, same))["rps"]["verdict"] == "uncertain"
    assert main(["compare", str(base), str(same), "--fail", "rps:-5%"]) == 2


def test_a_new_lower_bound_above_the_base_is_a_certain_improvement(tmp_path):
    base = write_side(tmp_path / "a", SAME_A)
    bound = write_side(tmp_path / "b", FAST, saturated=True)
    rows = by_metric(comparison.compare(base, bound))
    assert rows["rps"]["verdict"] == "better" and rows["rps"]["bounds"].startswith(
        "new is a lower bound above"
    )
    # level with the base: the new server is at least as fast - not a regression
    level = write_side(tmp_path / "c", SAME_B, saturated=True)
    rows = by_metric(comparison.compare(base, level))
    assert rows["rps"]["verdict"] == "~" and "at least as good" in rows["rps"]["bounds"]
    assert main(["compare", str(base), str(level), "--fail", "rps:-5%"]) == 0


def test_sets_of_run_json_files_compare(tmp_path):
    for side, repeats in (("a", SAME_A), ("b", SLOW)):
        (tmp_path / side).mkdir()
        for i, (rps, p50, p99, cpu) in enumerate(repeats):
            d = result_dict(rps, 1e6 / rps, p50, p99, cpu)
            d["config"] = {"connections": 10, "keepalive": True}
            (tmp_path / side / f"run{i}.json").write_text(json.dumps(d))
    rows = by_metric(comparison.compare(tmp_path / "a", str(tmp_path / "b" / "run*.json")))
    assert rows["rps"]["workload"] == "/plaintext" and rows["rps"]["load"] == 10
    assert rows["rps"]["verdict"] == "worse" and rows["rps"]["n_new"] == 6
    for side in ("a", "b"):  # runs without a sampled server: no CPU to judge is no pass
        for f in (tmp_path / side).glob("*.json"):
            d = json.loads(f.read_text())
            d["server"] = None
            f.write_text(json.dumps(d))
    assert "cpu" not in by_metric(comparison.compare(tmp_path / "a", tmp_path / "b"))
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "a"), "--fail", "cpu:+5%"]) == 2


def test_bad_input_is_one_clear_error(tmp_path, capsys):
    with pytest.raises(ConfigError, match="expected METRIC"):
        regression.parse_threshold("rps<5")
    with pytest.raises(ConfigError, match="unknown metric"):
        regression.parse_threshold("speed:-5%")
    assert (
        regression.parse_threshold("cpu:5").pct == 5
        and regression.parse_threshold("rps:5").pct == -5
    )
    base = write_side(tmp_path / "a", SAME_A)
    assert main(["compare", str(base), str(tmp_path / "nothing"), "--fail", "rps:-5%"]) == 2
    assert "no such results folder" in capsys.readouterr().err
