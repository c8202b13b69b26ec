"""A real run against the Beast server with sample_pid: the `server` block in the Result and
its JSON, taken at the edges of the measured window, agrees with independent /proc reads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sampler_helpers.child import proc_cpu_s, proc_stat_fields, proc_status_value

import loadbench
from loadbench.cli import main
from loadbench.core.result import Result

TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def test_server_block_of_a_run_agrees_with_independent_proc_reads(beast_server):
    pid = beast_server.pid
    cpu_before = proc_cpu_s(pid)  # the server is idle until the run starts
    fds_before = len(os.listdir(f"/proc/{pid}/fd"))
    result = loadbench.run(
        beast_server.url("/plaintext"), connections=4, requests=4000, sample_pid=pid
    )
    cpu_after = proc_cpu_s(pid)

    server = result.extras["server"]
    assert result.responses == 4000 and result.status_codes == {200: 4000}
    assert server["pid"] == pid and server["pids"] == [pid] and not server["exited"]
    # The window ends at the last response; only the closing of 4 connections comes after.
    assert server["cpu_s"] == pytest.approx(
        cpu_after - cpu_before, abs=2 * TICK_S + 0.02 * server["cpu_s"]
    )
    assert server["cpu_s"] > 0
    assert server["cpu_us_per_req"] == pytest.approx(server["cpu_s"] * 1e6 / 4000)
    assert server["fds_start"] == fds_before
    assert server["fds_end"] >= fds_before  # taken while the generator's connections were open
    assert server["threads"] == int(proc_stat_fields(pid)[17])
    assert server["rss_peak_kib"] == pytest.approx(proc_status_value(pid, "VmHWM"), rel=0.01)
    assert server["ctx_switches"] > 0
    assert 0 <= server["machine"]["idle_share"] <= 1 and 0 <= server["machine"]["steal_share"] <= 1

    data = json.loads(result.to_json())
    assert data["server"] == json.loads(json.dumps(server))
    assert Result.from_json(result.to_json()).extras["server"]["cpu_s"] == server["cpu_s"]
    assert any(
        "server        CPU" in line and "us/response" in line for line in result.summary_lines()
    )


def test_window_edges_are_the_engines_after_warm_up(beast_server):
    result = loadbench.run(
        beast_server.url("/plaintext"),
        connections=2,
        duration=0.5,
        warmup=0.3,
        sample_pid=beast_server.pid,
    )
    server = result.extras["server"]
    # Snapshots at the window's edges, not around the whole run (0.8 s with warm-up).
    assert server["window_s"] == pytest.approx(result.duration_s, abs=0.03)
    # per request: over the responses completed between the snapshots, which are the window's
    # but for the little each snapshot took after its edge (30 ms of 0.5 s at each edge at most)
    span = server["span_responses"]
    assert abs(span - result.responses) <= result.responses * 2 * 0.03 / 0.5
    assert server["cpu_us_per_req"] == pytest.approx(server["cpu_s"] * 1e6 / span)


def test_run_without_sample_pid_has_no_server_block(beast_server):
    result = loadbench.run(beast_server.url("/plaintext"), connections=1, requests=10)
    assert "server" not in result.extras and "server" not in result.to_dict()


def test_cli_run_sample_pid_prints_server_cpu_and_writes_json(beast_server, tmp_path: Path, capsys):
    out = tmp_path / "run.json"
    code = main(
        [
            "run",
            beast_server.url("/plaintext"),
            "-c",
            "2",
            "-n",
            "500",
            "--no-progress",
            "--sample-pid",
            str(beast_server.pid),
            "--json",
            str(out),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "server        CPU" in text and "us/response" in text
    server = json.loads(out.read_text())["server"]
    assert server["pid"] == beast_server.pid
    assert server["cpu_us_per_req"] == pytest.approx(server["cpu_s"] * 1e6 / 500)


def test_cli_run_bad_sample_pid_is_one_clear_error_before_any_load(beast_server, capsys):
    pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    code = main(
        [
            "run",
            beast_server.url("/plaintext"),
            "-n",
            "10",
            "--no-progress",
            "--sample-pid",
            str(pid),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"loadbench: error: cannot sample pid {pid}: no process with pid {pid}")
