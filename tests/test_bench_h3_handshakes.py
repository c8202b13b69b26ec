"""bench/h3_handshakes.py runs in one command and writes its JSONL and report; its counts agree
between the two sides exactly: over the server's life each connection slot's first handshake
is a full one and every later one resumes (and, in the 0-RTT cell, carries its request as
accepted early data). A smoke run only (1 s): no rate is checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench_drivers import h3_handshakes
from loadbench.core import _core

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not _core.http3_available(), reason="this build has no HTTP/3")
@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset not found (util-linux)")
def test_h3_handshakes_smoke_counts_agree_on_both_sides(tmp_path: Path) -> None:
    c = 2
    argv = ["-c", str(c), "-d", "1", "-r", "1", "--out", str(tmp_path)]
    assert h3_handshakes.main(REPO, argv) == 0
    lines = [json.loads(x) for x in (tmp_path / "h3-handshakes.jsonl").read_text().splitlines()]
    assert lines[0]["record"] == "environment"
    runs = {r["mode"]: r for r in lines[1:]}
    assert set(runs) == {"full", "resumed", "0-rtt"}
    for mode, r in runs.items():
        assert "na" not in r, r
        assert r["errors"] == 0 and r["responses"] == r["handshakes"] > 0, r
        s = r["server_h3"]
        assert s["handshakes"] >= r["handshakes"], r
        # the warm-up made each slot's full handshake: every one in the window is resumed
        expected_resumed = 0 if mode == "full" else r["handshakes"]
        assert r["resumed"] == expected_resumed, r
        assert s["resumed"] == (0 if mode == "full" else s["handshakes"] - c), r
        accepted = r["zero_rtt"]["accepted"] if r["zero_rtt"] else 0
        assert accepted == (r["handshakes"] if mode == "0-rtt" else 0), r
        assert s["zero_rtt"] == (s["resumed"] if mode == "0-rtt" else 0), r
    md = (tmp_path / "h3-handshakes.md").read_text()
    assert "| Seconds per run | 1.0 |" in md
    for mode in ("full", "resumed", "0-rtt"):
        assert f"| {mode} | " in md
    # rewritten from the JSONL alone, with the measured run's settings
    (tmp_path / "h3-handshakes.md").unlink()
    assert h3_handshakes.main(REPO, ["--out", str(tmp_path), "--report-only"]) == 0
    again = (tmp_path / "h3-handshakes.md").read_text()
    table = "## Handshakes per second"
    assert again[again.index(table) :] == md[md.index(table) :]
    assert "| Seconds per run | 1.0 |" in again


def test_h3_handshakes_refuses_a_run_past_the_anti_replay_window(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        h3_handshakes.main(REPO, ["-d", "12", "--out", str(tmp_path)])
    assert exit_.value.code == 2
    assert "anti-replay" in capsys.readouterr().err
