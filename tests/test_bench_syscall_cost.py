"""bench/syscall_counting_cost.py: a smoke run (0.5 s per mode and cell) writes both modes of
every cell into its raw data and report - counted with the counters on, n/a (turned off) without
them - and the per-repeat ratios. No figure is judged: what counting costs is the report's."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "syscall_counting_cost", REPO / "bench" / "syscall_counting_cost.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_smoke_run_writes_both_modes_and_the_paired_ratio(tmp_path: Path) -> None:
    out = tmp_path / "cost"
    bench = _bench()
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
    assert "| c = 10 | on / off (per repeat) |" in report
