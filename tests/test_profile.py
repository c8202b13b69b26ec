"""Server CPU profiles (core/profile.py, core/flamegraph.py): the folding and the SVG on a
hand-written `perf script` text, and `perf record` on a C server whose request path spends
~90 % of its CPU in burn_cpu() - known by construction to be the profile's top function."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cli_runner import loadbench_cli

import loadbench
from loadbench.core.flamegraph import layout, render
from loadbench.core.profile import (
    fold,
    parse_script,
    perf_missing,
    read_folded,
    top_functions,
    unknown_leaves,
    write_folded,
)
from loadbench.core.server import ServerProcess
from loadbench.sweep.targets import Target, launch

HERE = Path(__file__).resolve().parent
BURN_ITERATIONS = 300_000  # ~0.3 ms of xorshift per request: read/write are a few % beside it

SCRIPT = """\
burn 100/101 10.000100: cpu-clock:pppH:
\t    1139 burn_cpu (/tmp/burn)
\t    1200 serve (/tmp/burn)
\t    1300 connection_thread (/tmp/burn)
\t   94000 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)

burn 100/101 10.001100: cpu-clock:pppH:
\t    1139 burn_cpu (/tmp/burn)
\t    1200 serve (/tmp/burn)
\t    1300 connection_thread (/tmp/burn)
\t   94000 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)

burn 100/101 10.002100: cpu-clock:pppH:
\tffffffff81000000 tcp_sendmsg ([kernel.kallsyms])
\t    5000 __libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t    1200 serve (/tmp/burn)
\t    1300 connection_thread (/tmp/burn)
\t   94000 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)

burn 100/102 10.003100: cpu-clock:pppH:
\t    8000 std::vector<int, std::allocator<int> >::push_back(int const&) (/usr/lib/x86_64-linux-gnu/libstdc++.so.6)
\t    1200 serve (/tmp/burn)
\t    1300 connection_thread (/tmp/burn)
\t   94000 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)

my server 200/200 10.004100: cpu-clock:pppH:
\t    7777 [unknown] (/tmp/stripped (deleted))
\t       0 [unknown] ([unknown])
"""

FOLDED = {
    "burn;start_thread;connection_thread;serve;__libc_write;tcp_sendmsg": 1,
    "burn;start_thread;connection_thread;serve;burn_cpu": 2,
    "burn;start_thread;connection_thread;serve;std::vector<int, std::allocator<int> >"
    "::push_back(int const&)": 1,
    "my server;[unknown];[unknown] (stripped (deleted))": 1,
}


def test_parse_and_fold_a_hand_written_script(tmp_path):
    samples = parse_script(SCRIPT)
    assert [s.comm for s in samples] == ["burn"] * 4 + ["my server"]
    assert [s.pid for s in samples] == [100, 100, 100, 100, 200]
    assert samples[0].time_s == pytest.approx(10.0001)
    assert samples[0].event == "cpu-clock:pppH"
    assert samples[2].frames[0].symbol == "tcp_sendmsg"
    assert samples[2].frames[0].dso == "[kernel.kallsyms]"
    assert samples[4].frames[0].dso == "/tmp/stripped (deleted)"
    assert fold(samples) == FOLDED
    path = tmp_path / "perf.folded"
    write_folded(fold(samples), path)
    assert path.read_text().splitlines()[1] == (
        "burn;start_thread;connection_thread;serve;burn_cpu 2"
    )
    assert read_folded(path) == FOLDED


def test_top_functions_and_unknown_share():
    samples = parse_script(SCRIPT)
    top = top_functions(samples, cpu_us_per_req=10.0)
    first = top[0]
    assert (first["function"], first["module"]) == ("burn_cpu", "burn")
    assert (first["self_samples"], first["inclusive_samples"]) == (2, 2)
    assert first["self_share"] == pytest.approx(0.4)
    assert first["self_us_per_req"] == pytest.approx(4.0)
    # ties by name: [unknown] sorts before the letters
    assert [(t["function"], t["self_samples"]) for t in top[1:]] == [
        ("[unknown]", 1),
        ("std::vector<int, std::allocator<int> >::push_back(int const&)", 1),
        ("tcp_sendmsg", 1),
    ]
    assert top[1]["module"] == "stripped (deleted)"
    assert top_functions(samples)[0]["self_us_per_req"] is None
    share, modules = unknown_leaves(samples)
    assert share == pytest.approx(0.2) and modules == ["stripped (deleted)"]


def test_flamegraph_widths_and_tooltips():
    boxes = {(b["name"], b["depth"]): b for b in layout(FOLDED, width=1200)}
    # 5 samples over 1180 px (1200 less 10 px each side): one sample is 236 px
    assert boxes[("all", 0)] == {"name": "all", "depth": 0, "x": 10, "w": 1180, "samples": 5}
    assert (boxes[("burn", 1)]["x"], boxes[("burn", 1)]["w"]) == (10, 944)
    assert (boxes[("my server", 1)]["x"], boxes[("my server", 1)]["w"]) == (954, 236)
    # serve's callees in name order: __libc_write, burn_cpu, std::vector...
    assert (boxes[("__libc_write", 5)]["x"], boxes[("__libc_write", 5)]["w"]) == (10, 236)
    assert (boxes[("burn_cpu", 5)]["x"], boxes[("burn_cpu", 5)]["w"]) == (246, 472)
    assert boxes[("tcp_sendmsg", 6)]["samples"] == 1
    svg = render(FOLDED, title="test")
    root = ET.fromstring(svg)  # well-formed XML, C++ names escaped
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "<title>burn_cpu (2 samples, 40.00 %)</title>" in svg
    assert 'width="472.0"' in svg
    assert "http://" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_flamegraph_of_nothing_says_so():
    assert layout({}) == []
    assert "no samples" in render({})


# -- perf on real servers ------------------------------------------------------------------

needs_perf = pytest.mark.skipif(
    perf_missing() is not None or shutil.which("gcc") is None,
    reason="needs perf (linux-perf) and gcc",
)


@pytest.fixture(scope="module")
def burn_server_binary(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("burn") / "burn_cpu"
    subprocess.run(
        [
            "gcc",
            "-O1",
            "-fno-omit-frame-pointer",
            "-g",
            "-o",
            str(out),
            str(HERE / "servers" / "burn_cpu.c"),
            "-lpthread",
        ],
        check=True,
        capture_output=True,
    )
    return out


@needs_perf
def test_burn_cpu_is_on_top_of_the_profile(burn_server_binary, tmp_path):
    """The known-by-construction profile: burn_cpu() first by self share, named in the folded
    stacks, the flame graph and the top table, its callers unwound through frame pointers, and
    no sample from before the measured window (the server burns in the warm-up too)."""
    target = Target(
        "burn", kind="command", argv=[str(burn_server_binary), "{port}", str(BURN_ITERATIONS)]
    )
    server = launch(target, "http", workers=1, cpus=None)
    try:
        result = loadbench.run(
            server.base_url + "/",
            connections=2,
            duration=1.5,
            warmup=0.5,
            sample_pid=server.pid,
            profile=tmp_path / "prof",
        )
    finally:
        server.stop()
    assert result.responses > 0
    profile = result.extras["profile"]
    assert "error" not in profile, profile
    assert profile["samples"] > 50
    assert profile["call_graph"] == "fp" and profile["frequency_hz"] == 999
    top = profile["top"][0]
    assert (top["function"], top["module"]) == ("burn_cpu", "burn_cpu"), profile["top"][:3]
    assert top["self_share"] > 0.6, profile["top"][:3]
    assert top["self_us_per_req"] == pytest.approx(
        top["self_share"] * result.extras["server"]["cpu_us_per_req"], rel=1e-3
    )
    assert profile["unknown_share"] < 0.2
    folded = Path(profile["folded"]).read_text()
    # its callers unwound through frame pointers (serve() is not among them: gcc sets up no
    # frame in a leaf function even with -fno-omit-frame-pointer, so the leaf's own caller is
    # the one frame-pointer unwinding skips - docs/run.md says so). Not libc's start_thread
    # beneath it: libc has no symbol for it unless its debug symbols are installed (a fresh
    # Debian root reads "[unknown] (libc.so.6)" there)
    assert any(
        line.startswith("burn_cpu;") and ";connection_thread;burn_cpu " in line
        for line in folded.splitlines()
    ), folded[:500]
    svg = Path(profile["svg"]).read_text()
    assert "<title>burn_cpu (" in svg
    ET.fromstring(svg)
    assert "`burn_cpu`" in Path(profile["top_table"]).read_text()
    clock = profile["clock"]
    assert clock["window_opens_at"] is not None
    # perf was switched on when the window opened, after the warm-up, and sampled nothing before
    assert clock["enabled_at"] >= clock["window_opens_at"]
    assert clock["first_sample_at"] >= clock["window_opens_at"]
    assert clock["disabled_at"] >= clock["last_sample_at"]
    assert json.loads(json.dumps(result.to_dict()))["profile"]["top"][0]["function"] == "burn_cpu"
    assert any("burn_cpu" in line for line in result.summary_lines())


def test_cli_profile_needs_sample_pid(tmp_path):
    done = loadbench_cli("run", "--profile", str(tmp_path / "p"), "http://127.0.0.1:9/")
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "loadbench: error: --profile needs --sample-pid PID: the server process to profile"
    ]
    assert not (tmp_path / "p").exists()


def test_missing_perf_keeps_the_measured_result(tmp_path):
    """perf not there (LOADBENCH_PERF names no file): the run is measured and written, the
    summary says why there is no profile, and the exit status is not 0."""
    out = tmp_path / "result.json"
    with ServerProcess() as server:
        env = {**os.environ, "LOADBENCH_PERF": str(tmp_path / "no-perf")}
        done = subprocess.run(
            [
                *(sys.executable, "-m", "loadbench", "run"),
                *("-c", "2", "-z", "0.5s", "--no-progress", "--json", str(out)),
                *("--sample-pid", str(server.pid), "--profile", str(tmp_path / "p")),
                server.url("/plaintext"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"loadbench: error: no profile: --profile: LOADBENCH_PERF={tmp_path / 'no-perf'} "
        "is not an executable file"
    ]
    assert "requests/s" in done.stdout and "profile       none:" in done.stdout
    saved = json.loads(out.read_text())
    assert saved["responses"] > 0
    assert saved["server"]["cpu_us_per_req"] is not None
    assert saved["profile"] == {
        "error": f"--profile: LOADBENCH_PERF={tmp_path / 'no-perf'} is not an executable file"
    }


def test_refused_perf_keeps_the_measured_result(tmp_path):
    """A perf that exits at once (as one refused by perf_event_paranoid does): the run is
    measured, the profile block carries perf's own words."""
    fake = tmp_path / "perf"
    fake.write_text("#!/bin/sh\necho 'Error: perf_event_paranoid setting is 4' >&2\nexit 255\n")
    fake.chmod(0o755)
    os.environ["LOADBENCH_PERF"] = str(fake)
    try:
        with ServerProcess() as server:
            result = loadbench.run(
                server.url("/plaintext"),
                connections=2,
                duration=0.3,
                sample_pid=server.pid,
                profile=tmp_path / "p",
            )
    finally:
        del os.environ["LOADBENCH_PERF"]
    assert result.responses > 0
    assert result.extras["profile"]["error"].startswith("perf record could not attach: ")
    assert "perf_event_paranoid" in result.extras["profile"]["error"]
    assert not list((tmp_path / "p").glob(".perf-c*"))  # no FIFO left behind


def test_bad_profile_settings_fail_before_the_run(tmp_path):
    with pytest.raises(loadbench.ConfigError, match="call graph 'lbr'"):
        loadbench.run(
            "http://127.0.0.1:9/",
            sample_pid=os.getpid(),
            profile=tmp_path,
            profile_call_graph="lbr",
        )


@needs_perf
def test_sweep_profiles_each_cell_and_the_report_shows_the_best(burn_server_binary, tmp_path):
    """profile = true: each closed-loop cell gets one more, profiled, window after its repeats
    (its files under profiles/, its block in profiles.json - never a measured record), and the
    report's "Where the CPU goes" and the dashboard draw from it."""
    from loadbench.report import document, html, model
    from loadbench.report.dashboard import dashboard_data
    from loadbench.sweep.results_folder import ResultsFolder
    from loadbench.sweep.runner import Sweep

    Sweep(
        targets=[
            Target(
                "burn",
                kind="command",
                argv=[str(burn_server_binary), "{port}", str(BURN_ITERATIONS)],
            )
        ],
        workloads=["plaintext"],
        concurrencies=[2],
        protocols=["http"],
        repeats=1,
        duration=0.8,
        warmup=0.2,
        contended_reruns=0,
        settle=False,
        profile=True,
    ).run(tmp_path, progress=False, notes=False)
    folder = ResultsFolder(tmp_path)
    assert len(folder.records()) == 1  # the profiled window is not a measured cell
    profiles = folder.profiles()
    assert list(profiles) == ["burn|http|plaintext|c2"]
    block = profiles["burn|http|plaintext|c2"]
    assert "error" not in block, block
    assert block["top"][0]["function"] == "burn_cpu"
    assert block["svg"] == "profiles/burn-http-plaintext-c2/flamegraph.svg"
    assert block["perf_data"] is None
    assert (tmp_path / block["svg"]).is_file() and (tmp_path / block["folded"]).is_file()
    assert not (tmp_path / "profiles/burn-http-plaintext-c2/perf.data").exists()
    assert block["profiled_rps"] > 0  # kept beside the profile, never as the cell's req/s
    document.write_report(tmp_path, charts=False)
    text = (tmp_path / "report.md").read_text()
    section = text.split("## Where the CPU goes")[1].split("\n## ")[0]
    assert "[flame graph](profiles/burn-http-plaintext-c2/flamegraph.svg)" in section
    row = next(line for line in section.splitlines() if line.startswith("| 1 |"))
    assert "`burn_cpu`" in row
    cells = dashboard_data(model.load(tmp_path))["cells"]
    assert cells[0]["flamegraph"] == "profiles/burn-http-plaintext-c2/flamegraph.svg"
    page = html.write_html(tmp_path).read_text()
    assert 'id="flamegraphs"' in page
