"""bench/capacity_agreement.py: two hand-made sweeps' capacity searches, and its verdict per
server - the spans of capacities each sweep leaves possible (found medians with their range, a
generator-bound search's [L, U]) overlap or they do not - and one clear error for a folder that
is not a sweep's."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Optional

from sweep_data import SETTINGS, capacity_record, record, result_dict, search, table_rows

from loadbench.sweep import results_folder as results

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "capacity_agreement", REPO / "bench" / "capacity_agreement.py"
)
agreement = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agreement)  # type: ignore[union-attr]


def found(cap: float) -> dict:
    return search("capacity", [(cap, 3.0)], [(cap * 1.05, 30.0)])


def bounded(low: float, ceiling=None) -> dict:
    return search("generator-bound", [(low, 1.0)], [], ceiling=ceiling)


def _sweep(d: Path, searches: dict[str, list[dict]], costs: Optional[dict] = None) -> Path:
    d.mkdir()
    settings = copy.deepcopy(SETTINGS)
    settings["targets"] = [{"name": n, "kind": "command", "description": n} for n in searches]
    (d / results.SETTINGS_FILE).write_text(json.dumps(settings))
    (d / results.ENVIRONMENT_FILE).write_text(
        json.dumps({"host": "testhost", "cpu": {"logical_cores": 2}})
    )
    for target, its in searches.items():
        for repeat, s in enumerate(its):
            rec = capacity_record(target, repeat, s)
            if s.get("outcome") == "skipped":  # the server was not installed on that machine
                rec.update(status="skipped", result=None, error="not installed")
            results.append_record(d / results.RESULTS_FILE, rec)
    for target, per_repeat in (
        costs or {}
    ).items():  # closed-loop cells: the server's own CPU us/req
        for repeat, us in enumerate(per_repeat):
            rps = 50_000.0
            result = result_dict(rps, 500.0, 450.0, 1500.0, cpu_s=us * rps * 2.0 / 1e6)
            rec = record(target, "http", "plaintext", "closed", 25, repeat, result=result)
            results.append_record(d / results.RESULTS_FILE, rec)
    return d


def test_overlapping_spans_agree_and_disjoint_ones_do_not(tmp_path):
    first = _sweep(
        tmp_path / "a",
        {
            "steady": [found(20_000), found(20_500), found(19_800)],
            "drifted": [found(18_000), found(18_200), found(17_900)],
            "capped": [bounded(50_000, 70_000)] * 3,
            "open": [bounded(8_000)] * 3,  # no CPU ceiling: open above
            "gone": [found(5_000)] * 3,
            "knee": [found(21_000)],  # the knee lies in [21 000, 22 050): its first failing rate
            "absent": [{"outcome": "skipped"}],
        },
    )
    second = _sweep(
        tmp_path / "b",
        {
            "steady": [found(20_300), found(21_000), found(20_100)],
            "drifted": [found(24_000), found(24_500), found(23_800)],
            # found inside the first sweep's [L, U]: what the interval said was possible
            "capped": [found(62_000)] * 3,
            # above an open bound: not refuted, but nothing agreed either
            "open": [found(30_000)] * 3,
            "knee": [found(21_800)],
            "absent": [found(9_000)],
        },
    )
    out = tmp_path / "agreement.md"
    assert agreement.main([str(first), str(second), "--out", str(out)]) == 0
    text = out.read_text()
    rows = {r[0]: r for r in table_rows(text, "# Capacity in two sweeps")[1:]}
    assert rows["steady"][4:6] == ["yes", "+1.5 %"]  # medians 20 000 -> 20 300
    assert rows["drifted"][4:6] == ["NO", "+33.3 %"]  # 18 000 -> 24 000: disjoint ranges
    assert rows["capped"][4] == "yes" and rows["capped"][2].startswith("≥ 50 000 (≤ 70 000 by CPU)")
    assert rows["open"][4:6] == ["open bound", "+275.0 %"]
    assert rows["gone"][3] == "not run" and rows["gone"][4] == "n/a"
    assert rows["steady"][2].endswith("[3 of 3 searches stated; 3 capacity]"), rows["steady"]
    assert rows["knee"][4:6] == ["yes", "+3.8 %"]  # 21 800 lies below the first failing 22 050
    assert rows["absent"][2:5] == ["not measured (skipped)", rows["absent"][3], "n/a"]
    assert "3 of 6 servers agree; 1 do not; 1 only through a bound open above; 1 n/a." in text
    assert "moved with the server's own CPU" not in text  # no closed-loop cell, no cost to blame


def test_a_disagreement_that_moved_with_the_servers_own_cost_says_so(tmp_path):
    """Two sweeps whose capacities are disjoint: where the server's CPU per response at its
    closed-loop cell moved beyond both sweeps' repeats, the table and the last line say the
    server (or the machine) changed; where it stayed, the disagreement is left unexplained."""
    searches = {"slower": [found(18_000)] * 3, "same": [found(18_000)] * 3}
    first = _sweep(tmp_path / "a", searches, {"slower": [10.0, 10.2, 10.1], "same": [10.0] * 3})
    searches = {"slower": [found(12_000)] * 3, "same": [found(12_000)] * 3}
    second = _sweep(tmp_path / "b", searches, {"slower": [15.0, 15.2, 15.1], "same": [10.0] * 3})
    out = tmp_path / "agreement.md"
    assert agreement.main([str(first), str(second), "--out", str(out)]) == 0
    text = out.read_text()
    rows = {r[0]: r for r in table_rows(text, "# Capacity in two sweeps")[1:]}
    assert rows["slower"][4] == rows["same"][4] == "NO"
    assert rows["slower"][6] == "10.1 → 15.1 (+50 %)" and rows["same"][6] == "10.0 → 10.0 (+0 %)"
    assert "Of those that do not, 1 moved with the server's own CPU" in text
    assert "slower 10.1 → 15.1 (+50 %)" in text and "same 10.0" not in text


def test_a_folder_that_is_no_sweep_is_one_clear_error(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert agreement.main([str(empty), str(empty), "--out", str(tmp_path / "x.md")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("capacity_agreement: ") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.md").exists()
