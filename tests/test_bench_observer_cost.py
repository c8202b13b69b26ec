"""What observing a server costs (issue 46), as the bench drivers measure it - smoke runs of 0.5 s
per mode: bench/syscall_counting_cost.py writes both modes of every cell into its raw data and
report (counted with the counters on, n/a - turned off - without them) and the per-repeat ratios;
bench/profile_cost.py a plain, a frame-pointer and a DWARF-profiled window, with their samples.
No figure is judged: what observing costs is the reports'."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from loadbench.core.profile import perf_missing

REPO = Path(__file__).resolve().parents[1]


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_smoke_run_writes_both_modes_and_the_paired_ratio(tmp_path: Path) -> None:
    out = tmp_path / "cost"
    bench = _bench("syscall_counting_cost")
    assert bench.main(["--smoke", "--no-wait", "--connections", "10", "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    runs = [r for r in records if r.get("record") == "run" and not r.get("superseded")]
    assert sorted(r["mode"] for r in runs) == ["off", "on"]
    for r in runs:
        assert r["responses"] > 0 and r["errors"] == 0
        assert r["server_cpu_us_per_req"] > 0 and r["generator_cpu_us_per_req"] > 0
    off = next(r for r in runs if r["mode"] == "off")
    on = next(r for r in runs if r["mode"] == "on")
    assert off["syscalls_per_req"] is None and "turned off" in off["syscalls_na"]
    # counted where the kernel allows, else the reason - never a zero standing for "unknown"
    assert (on["syscalls_per_req"] or 0) > 1 or on["syscalls_na"]
    report = out.with_suffix(".md").read_text()
    assert "| loadbench-server c = 10 | on / off (per repeat) |" in report


@pytest.mark.skipif(perf_missing() is not None, reason="needs perf (linux-perf)")
def test_profile_cost_smoke_run_writes_the_three_modes(tmp_path: Path) -> None:
    out = tmp_path / "cost"
    assert _bench("profile_cost").main(["--smoke", "--no-wait", "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    runs = {r["mode"]: r for r in records if r.get("record") == "run"}
    assert set(runs) == {"plain", "profiled fp", "profiled dwarf"}
    assert all(r["responses"] > 0 and r["errors"] == 0 for r in runs.values())
    assert runs["plain"]["samples"] is None
    for mode in ("profiled fp", "profiled dwarf"):
        assert runs[mode]["profile_error"] is None and runs[mode]["samples"] > 0, runs[mode]
    assert "| profiled dwarf |" in out.with_suffix(".md").read_text()
