"""bench/h3_generator_cost.py (issue 33, part 5) runs in one command, writes its JSONL and its
report, counts from each tool's own output, and marks a missing or failing anchor n/a with the
reason instead of a number. A smoke run only (1 s, one connection): no figure is checked."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from bench_drivers import h3_generator_cost
from loadbench.core import _core

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("caddy") is None, reason="caddy not found: apt-get install caddy")
@pytest.mark.skipif(not _core.http3_available(), reason="this build has no HTTP/3")
@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset not found (util-linux)")
def test_h3_cost_smoke_counts_and_marks_missing_anchors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOADBENCH_OHA_H3", str(tmp_path / "no-such-oha"))
    argv = ["-c", "1", "-d", "1", "-r", "1", "--protocols", "h3", "--out", str(tmp_path)]
    argv += ["--before", sys.executable]  # "another build": this one, beside itself
    assert h3_generator_cost.main(REPO, argv) == 0
    lines = [json.loads(x) for x in (tmp_path / "h3-generator-cost.jsonl").read_text().splitlines()]
    assert lines[0]["record"] == "environment"
    runs = {r["generator"]: r for r in lines[1:]}
    ours = runs["loadbench"]
    assert "na" not in ours, ours
    assert ours["protocol"] == "h3" and ours["responses"] > 0 and ours["errors"] == 0
    # the count is the run JSON's own, and the quic block came along
    assert ours["extra"]["quic"]["datagrams_received"] >= ours["responses"]
    assert ours["cpu_us_per_response"] == pytest.approx(ours["cpu_s"] * 1e6 / ours["responses"])
    assert "no-such-oha" in runs["oha"]["na"]
    md = (tmp_path / "h3-generator-cost.md").read_text()
    if "na" not in runs["quic-go"]:  # built (bench/install-peers.sh): its own JSON count
        assert runs["quic-go"]["responses"] > 0 and runs["quic-go"]["errors"] == 0
    else:
        assert "bash bench/install-peers.sh" in runs["quic-go"]["na"]
    assert "| h3 | oha | 1 | n/a |" in md
    anchors = {
        k: r["cpu_us_per_response"]
        for k, r in runs.items()
        if not k.startswith("loadbench") and "na" not in r
    }
    if anchors:  # loadbench over the cheapest anchor of the cell, as the report states it
        best = min(anchors, key=anchors.get)
        ratio = ours["cpu_us_per_response"] / anchors[best]
        assert f"- h3, c=1: loadbench {ours['cpu_us_per_response']:.2f} us vs {best}" in md
        assert f"({ratio:.2f}x)" in md
    else:
        assert "- h3, c=1: loadbench" not in md
    assert "| h3 | loadbench | 1 | " in md and "| h3 | loadbench | 1 | n/a" not in md
    # --before: the other build's runs beside, and this build over it per cell
    then = runs["loadbench-before"]
    assert then["responses"] > 0 and then["errors"] == 0, then
    now_us, then_us = ours["cpu_us_per_response"], then["cpu_us_per_response"]
    assert "## This build against the one before (--before)" in md
    assert f"- h3, c=1: {now_us:.2f} us vs {then_us:.2f} us before ({now_us / then_us:.2f}x)" in md
    # the report is rewritten from the JSONL alone: its settings (1 s per run, not the default)
    # come from the recorded command, not from the rewriting one's arguments
    (tmp_path / "h3-generator-cost.md").unlink()
    assert h3_generator_cost.main(REPO, ["--out", str(tmp_path), "--report-only"]) == 0
    again = (tmp_path / "h3-generator-cost.md").read_text()
    table = "## CPU per response"
    assert again[again.index(table) :] == md[md.index(table) :]
    asked = [
        x for x in md.splitlines() if x.startswith(("| Connections", "| Seconds", "| Repeats"))
    ]
    assert len(asked) == 3 and all(x in again.splitlines() for x in asked), asked
    assert "| Seconds per run | 1 |" in md


def test_h3_cost_refuses_an_unknown_protocol(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        h3_generator_cost.main(REPO, ["--protocols", "h4", "--out", str(tmp_path)])
    assert exit_.value.code == 2
    assert "unknown protocol 'h4'" in capsys.readouterr().err
