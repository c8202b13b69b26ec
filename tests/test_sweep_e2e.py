"""Small real sweeps end to end: Beast + the Python asyncio peer on 127.0.0.1.

One module-scoped sweep (2 servers x http/https x plaintext at C = 1 and 4 + json at C = 4 +
a connection-setup cell, one-second windows) feeds the report, chart and notebook checks;
separate tiny sweeps cover resume after an interruption and a peer that dies mid-sweep.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sweep_data import table_rows

from loadbench import Sweep, Target, Workload, model
from loadbench.report import document as report
from loadbench.report import markdown
from loadbench.sweep import results_folder as results
from loadbench.sweep.registry import default_peer_targets

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / "bench" / "peers"
HERE = Path(__file__).resolve().parent


def python_peer() -> Target:
    return next(t for t in default_peer_targets(PEERS) if t.name == "python-asyncio")


@pytest.fixture(scope="module")
def real_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    json_wl = Workload("json", "GET", "/json", concurrencies=[4])
    sweep = Sweep(
        targets=[Target("beast"), python_peer()],
        workloads=["plaintext", json_wl],
        concurrencies=[1, 4],
        protocols=["http", "https"],
        connection_setup=True,
        connection_setup_concurrency=2,
        repeats=1,
        duration=1.0,
        warmup=0.2,
        peers_dir=str(PEERS),
        open_fractions=[0.5],
        contended_reruns=0,
        run_options={"seed": 7},  # the [run] table: an engine option for every cell
    )
    sweep.run(out, progress=False)
    report.write_report(out)
    return sweep, out


def test_every_cell_measured_once_with_exact_counts(real_sweep):
    sweep, out = real_sweep
    records = results.read_records(out / "results.jsonl")
    # in the order they ran: the block's servers shuffled from the recorded seed
    order = [c.id for c in sweep.run_order()]
    assert [r["id"] for r in records] == order
    assert sorted(order) == sorted(c.id for c in sweep.cells())
    assert len(records) == 2 * 2 * 5
    for r in records:
        assert r["status"] == "ok", r
        res = r["result"]
        assert res["responses"] > 0 and res["status_codes"] == {"200": res["responses"]}, r["id"]
        assert sum(res["errors"].values()) == 0, r["id"]
        # /proc counts CPU in 10 ms ticks: a one-second cell of a starved server may see none
        assert res["server"]["cpu_s"] >= 0 and res["server"]["pid"] == r["server"]["pid"]
        assert r["server"]["cpus"] == sweep.server_cpus
        assert r["sampler"]["samples"] > 0
        # the machine's CPU share used by other processes in the window, judged by the sweep
        assert r["machine_cores"] == os.cpu_count() and r["reruns"] == 0 and "contended" in r
        if r["mode"] == "open":  # half the best closed-loop median req/s of the same server
            assert r["load_pct"] == 50 and r["connections"] >= 1  # the percent has its own field
            closed = [
                x["result"]["rps"]
                for x in records
                if x["mode"] == "closed"
                and x["workload"] == "plaintext"
                and (x["target"], x["protocol"]) == (r["target"], r["protocol"])
            ]
            assert res["rate"]["target"] == pytest.approx(0.5 * max(closed))
            assert "latency_uncorrected_us" in res
            assert res["config"]["seed"] == 7  # from the sweep's [run] table
        if r["mode"] == "connect":
            # one connection per request; up to C of them still open when the window closes
            assert (
                res["responses"] <= res["connections_opened"] <= res["responses"] + r["connections"]
            )
    for target in {r["target"] for r in records}:  # but every server's CPU over its cells shows
        assert sum(r["result"]["server"]["cpu_s"] for r in records if r["target"] == target) > 0, (
            target
        )
    env = json.loads((out / "environment.json").read_text())
    assert env["generator_cpus"] and env["server_cpus"]


def _plain(cell: str) -> str:
    """The number of a table cell without its marks. A lower bound ("≥ N") is written for a
    generator-bound cell (§) only, in the rows it bounds (req/s, connection rate)."""
    if cell.startswith("≥ ") or cell.startswith("**≥ "):
        assert "§" in cell, cell
    for mark in ("**", " ‡", " §", " †", " ⚑", " ✗", "≥ "):
        cell = cell.replace(mark, "")
    # a bound's upper end, the server's CPU ceiling (a generator-bound cell on a busy machine:
    # "≥ 86 325 (≤ 99 222 by CPU) §" in a run beside a CPU burner)
    return re.sub(r" \(≤ [\d ]+ by CPU\)", "", cell)


def test_report_tables_match_the_raw_numbers(real_sweep):
    _, out = real_sweep
    text = (out / "report.md").read_text()
    records = results.read_records(out / "results.jsonl")
    raw = {
        (
            r["target"],
            r["protocol"],
            r["workload"],
            r["mode"],
            r.get("load_pct") or r["connections"],
        ): r["result"]
        for r in records
    }
    for protocol, title in (("http", "HTTP/1.1 (http)"), ("https", "HTTP/1.1 over TLS (https)")):
        rows = table_rows(text, f"## {title}, plaintext, keep-alive")
        assert rows[0] == ["Metric", "Server", "C = 1", "C = 4"]
        metric = None
        for row in rows[1:]:
            metric = row[0] or metric
            for c, cell in zip((1, 4), row[2:]):
                res = raw[(row[1], protocol, "plaintext", "closed", c)]
                expected = {
                    "req/s": markdown.fmt_int(res["rps"]),
                    "p50 (ms)": markdown.fmt_ms(res["latency_us"]["p50"] / 1000),
                    "p99 (ms)": markdown.fmt_ms(res["latency_us"]["p99"] / 1000),
                    "CPU us/req": markdown.fmt_us(res["server"]["cpu_us_per_req"]),
                    "syscalls/req": markdown.fmt_count(res["server"]["syscalls_per_req"])
                    if res["server"].get("syscalls_per_req") is not None
                    else f"n/a {markdown.NA_MARK}",
                    "ctx switches/req": markdown.fmt_count(res["server"]["ctx_switches_per_req"]),
                    "in-flight": f"{res['rps'] * res['latency_us']['mean'] / 1e6:.1f}",
                    "non-2xx + errors": "0 %",
                }[metric]
                assert _plain(cell) == expected, (protocol, metric, row[1], c)
    conn = table_rows(text, "## Connection setup")
    assert conn[0][:3] == ["Server", "http conn/s", "https handshakes/s"]
    for row in conn[1:]:
        for protocol, cell in zip(("http", "https"), row[1:3]):
            res = raw[(row[0], protocol, "plaintext", "connect", 2)]
            assert _plain(cell) == markdown.fmt_int(res["connections_opened"] / res["duration_s"])
    for row in table_rows(text, "## Open loop")[1:]:
        res = raw[(row[0], row[1], "plaintext", "open", 50)]
        assert row[2] == "50 % of capacity"
        assert [_plain(c) for c in row[3:7]] == [
            markdown.fmt_int(res["rate"]["target"]),
            markdown.fmt_int(res["rps"]),
            markdown.fmt_ms(res["latency_us"]["p50"] / 1000),
            markdown.fmt_ms(res["latency_us"]["p99"] / 1000),
        ]
        assert row[9] == markdown.fmt_ms(res["latency_uncorrected_us"]["p99"] / 1000)
    for png in (
        "latency_vs_throughput.png",
        "memory_peak_rss.png",
        "throughput_vs_concurrency.png",
    ):
        assert (out / png).stat().st_size > 10_000 and f"]({png})" in text
    # bar charts of ranked cells only: on a busy machine every cell may be contended (then no chart)
    ranked = any(a.ranked for a in model.load(out).aggs.values())
    for png in (
        "throughput_peak.png",
        "protocol_http_vs_https.png",
        "workloads.png",
        "latency.png",
        "connection_setup.png",
    ):
        if (out / png).exists():
            assert ranked and (out / png).stat().st_size > 10_000 and f"]({png})" in text
        else:
            assert f"]({png})" not in text
    # the peak chart draws ranked closed-loop cells; a ranked connection-setup cell alone (every
    # closed-loop cell contended by the suite's other worker) draws connection_setup.png only
    if any(a.ranked and a.mode == "closed" for a in model.load(out).aggs.values()):
        assert (out / "throughput_peak.png").exists()


def test_notebook_runs_on_the_real_sweep(real_sweep):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    _, out = real_sweep
    nb = nbformat.read(REPO / "notebooks" / "explore.ipynb", as_version=4)
    os.environ["LOADBENCH_RESULTS"] = str(out)
    try:
        nbclient.NotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            resources={"metadata": {"path": str(REPO / "notebooks")}},
        ).execute()
    finally:
        del os.environ["LOADBENCH_RESULTS"]
    printed = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert f"{out} 20 rows" in printed
    assert (out / "notebook_concurrency.png").stat().st_size > 10_000
    # %matplotlib inline: the chart is in the notebook itself, not only in a file
    assert any(
        "image/png" in o.get("data", {})
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


def _write_toml(path: Path, body: str) -> Path:
    path.write_text(body)
    return path


def test_resume_after_interruption_loses_and_repeats_nothing(tmp_path):
    config = _write_toml(
        tmp_path / "s.toml",
        f"""
duration = 0.5
warmup = 0
concurrencies = [1, 2, 3, 4, 5, 6]
protocols = ["http"]
peers_dir = "{PEERS}"
[[targets]]
name = "py"
kind = "command"
argv = ["{{python}}", "{{peers}}/python/server.py", "{{port}}"]
""",
    )
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "loadbench",
        "sweep",
        str(config),
        "--out",
        str(out),
        "--no-report",
        "--no-wait",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    results_file = out / "results.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if results_file.exists() and results_file.read_text().count("\n") >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err.decode()
    assert b"Run the same command again to resume" in err
    first = results_file.read_text()
    kept = [json.loads(line) for line in first.splitlines()]
    assert 2 <= len(kept) < 6 and all(r["status"] == "ok" for r in kept)
    for r in kept:  # the interrupted run stopped its server
        assert not Path(f"/proc/{r['server']['pid']}").exists()
    done = subprocess.run(cmd, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    final = results_file.read_text()
    assert final.startswith(first)  # nothing lost or rewritten
    ids = [json.loads(line)["id"] for line in final.splitlines()]
    assert ids == [f"py|http|plaintext|c{c}|r0" for c in range(1, 7)]  # each cell exactly once


def test_torn_last_line_is_dropped_and_rerun(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b", "sta')
    assert [r["id"] for r in results.read_records(path)] == ["a"]
    results.repair_tail(path)
    assert path.read_text() == '{"id": "a"}\n'


def test_peer_that_dies_mid_sweep_gives_fail_cells_and_the_sweep_completes(tmp_path):
    dying = Target(
        "dying",
        kind="command",
        argv=[sys.executable, str(HERE / "peers" / "dies_after.py"), "{port}", "40"],
    )
    broken = Target(
        "broken",
        kind="command",
        ready_timeout=2,
        argv=[sys.executable, "-c", "import sys; sys.exit('no config file')"],
    )
    sweep = Sweep(
        targets=[dying, broken, Target("beast")],
        concurrencies=[1, 2],
        protocols=["http"],
        duration=0.5,
        warmup=0,
        repeats=1,
    )
    out = tmp_path / "out"
    sweep.run(out, progress=False)
    by_id = {r["id"]: r for r in results.read_records(out / "results.jsonl")}
    assert list(by_id) == [c.id for c in sweep.run_order()]
    for c in (1, 2):
        died = by_id[f"dying|http|plaintext|c{c}|r0"]
        assert died["status"] == "fail"
        assert (
            "server died during the cell" in died["error"]
            and "served 40 requests, exiting" in died["error"]
        )
        never = by_id[f"broken|http|plaintext|c{c}|r0"]
        assert never["status"] == "fail" and "never became ready" in never["error"]
        assert "no config file" in never["error"]
        assert by_id[f"beast|http|plaintext|c{c}|r0"]["status"] == "ok"
    text = report.render(out)
    rows = table_rows(text, "## HTTP/1.1 (http), plaintext, keep-alive")
    req = {r[1]: r[2:] for r in rows[1:4]}
    assert req["dying"] == ["FAIL", "FAIL"] and req["broken"] == ["FAIL", "FAIL"]
    assert "FAIL = the server died or never became ready" in text


def test_already_running_url_is_sampled_only_with_a_pid(beast_server, tmp_path):
    with_pid = Target("ext", kind="url", url=beast_server.url(""), pid=beast_server.pid)
    without = Target("ext-nopid", kind="url", url=beast_server.url(""))
    sweep = Sweep(targets=[with_pid, without], concurrencies=[2], duration=0.5, warmup=0)
    sweep.run(tmp_path, progress=False)
    first, second = results.read_records(tmp_path / "results.jsonl")
    assert first["status"] == second["status"] == "ok"
    assert (
        first["result"]["server"]["pid"] == beast_server.pid
        and first["result"]["server"]["cpu_s"] > 0
    )
    assert not second["result"].get("server") and "sampler" not in second
    assert beast_server.proc.poll() is None  # no lifecycle: the sweep leaves it running
    served = beast_server.stop()
    assert (
        served["requests"]["plaintext"]
        >= first["result"]["responses"] + second["result"]["responses"]
    )


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_killed_sweep_leaves_no_server_behind_and_resumes(tmp_path, how):
    config = _write_toml(
        tmp_path / "k.toml",
        f"""
duration = 0.5
warmup = 0
concurrencies = [1, 2, 3]
peers_dir = "{PEERS}"
[[targets]]
name = "py"
kind = "command"
argv = ["{{python}}", "{{peers}}/python/server.py", "{{port}}"]
""",
    )
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "loadbench",
        "sweep",
        str(config),
        "--out",
        str(out),
        "--no-report",
        "--no-wait",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results_file = out / "results.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        results_file.exists() and results_file.read_text().count("\n")
    ):
        time.sleep(0.02)
    pid = json.loads(results_file.read_text().splitlines()[0])["server"]["pid"]
    proc.send_signal(how)
    proc.communicate(timeout=30)
    assert proc.returncode == (130 if how == signal.SIGTERM else -signal.SIGKILL)
    deadline = time.monotonic() + 10
    while (
        Path(f"/proc/{pid}").exists() and time.monotonic() < deadline
    ):  # SIGKILL: the kernel tells it
        time.sleep(0.02)
    assert (
        not Path(f"/proc/{pid}").exists()
        or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
    )
    done = subprocess.run(cmd, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    ids = [json.loads(line)["id"] for line in results_file.read_text().splitlines()]
    assert ids == [f"py|http|plaintext|c{c}|r0" for c in (1, 2, 3)]
