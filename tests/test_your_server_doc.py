"""docs/your-server.md, run as written: its files (fenced blocks whose info names a path) are
written into a scratch checkout, its `bash` blocks run in order - the servers built, the probe,
a first sweep and the plan of the comparison with every peer - and what they print is checked
against what the page says. The only changes: `--no-wait --contended-reruns 0 --no-progress` on
the sweep that measures (a test machine is never quiet: its windows are kept and marked, not
re-run - the hypervisor's steal alone re-ran 12 of its 24 cells, 20 windows more, on an
otherwise idle machine) and `python3` meaning the interpreter running the tests."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loadbench.sweep.registry import default_peer_targets

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "your-server.md"
FENCE = re.compile(r"^```(\w+)(?: (\S+))?\n(.*?)^```$", re.M | re.S)


def _blocks() -> list[tuple[str, str, str]]:
    """(language, path or "", text) of every fenced block, in page order."""
    return [(m[1], m[2] or "", m[3]) for m in FENCE.finditer(DOC.read_text())]


def _probe_rows(text: str) -> list[tuple[str, ...]]:
    """target, protocol, workload and the answer with its byte count masked, per probe line."""
    rows = []
    for line in text.splitlines():
        if line.startswith("  "):
            target, protocol, workload, answer = line.split(None, 3)
            rows.append((target, protocol, workload, re.sub(r"\d+ bytes", "N bytes", answer)))
    return rows


def test_the_page_links_from_the_readme_and_names_its_files():
    assert "docs/your-server.md" in (REPO / "README.md").read_text()
    files = [path for _, path, _ in _blocks() if path]
    assert files == [
        "my-server/hello.c",
        "my-server/hello.py",
        "my-server/my-servers.toml",
        "my-server/with-peers.toml",
    ]


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (bash .ci/install.sh)")
def test_the_page_runs_as_written(tmp_path):
    (tmp_path / "bench").symlink_to(REPO / "bench")  # a checkout: default_peers finds ./bench/peers
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    outputs = []
    shown_probe = None
    for language, path, text in _blocks():
        if path:
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text)
        elif language == "text" and "--probe" not in text and "probing" in text:
            shown_probe = text
        elif language == "bash":
            for command in text.strip().splitlines():
                measures = " sweep " in command and not re.search(r"--(probe|plan)\b", command)
                if measures:
                    command += " --no-wait --contended-reruns 0 --no-progress"
                proc = subprocess.run(
                    ["bash", "-c", command],
                    cwd=tmp_path,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert proc.returncode == 0, (command, proc.stdout[-2000:], proc.stderr[-3000:])
                outputs.append((command, proc))
    commands = [c for c, _ in outputs]
    assert [c.split(" --")[0] for c in commands] == [
        "cc -O2 -pthread -o my-server/hello-c my-server/hello.c",
        "cc -O0 -pthread -o my-server/hello-c-O0 my-server/hello.c",
        "python3 -m loadbench sweep my-server/my-servers.toml",
        "python3 -m loadbench sweep my-server/my-servers.toml",
        "python3 -m loadbench sweep my-server/with-peers.toml",
    ]
    _, probe = outputs[2]
    # the probe's table is the one the page shows (byte counts aside: headers such as Date)
    assert shown_probe is not None
    assert _probe_rows(probe.stdout) == _probe_rows(shown_probe)
    assert "every served workload answered 2xx" in probe.stderr

    report = (tmp_path / "reports" / "my-servers" / "report.md").read_text()
    assert "## Variant speedup: hello-c-O0 vs hello-c" in report
    records = [
        json.loads(line)
        for line in (tmp_path / "reports/my-servers/results.jsonl").read_text().splitlines()
    ]
    measured = {(r["target"], r["protocol"], r["workload"]) for r in records if r["status"] == "ok"}
    for target, protocols in (
        ("hello-c", ["http"]),
        ("hello-c-O0", ["http"]),
        ("hello-py", ["http", "https"]),
        ("beast", ["http", "https", "h2c", "h2"]),
    ):
        for p in protocols:
            for w in ("plaintext", "json", "echo"):
                assert (target, p, w) in measured, (target, p, w)
    for r in records:
        if r["status"] == "ok":
            res = r["result"]
            assert res["status_codes"] == {"200": res["responses"]}, r["id"]
            assert r["reruns"] == 0, r["id"]  # --contended-reruns 0: the first window kept
    skipped = {r["error"] for r in records if r["target"] == "hello-c" and r["status"] == "skipped"}
    assert skipped == {
        "hello.c has no TLS",
        "hello.c speaks HTTP/1.1 only",
        "hello.c has no TLS and speaks HTTP/1.1 only",
    }

    _, plan = outputs[4]  # the comparison with every peer: planned, each server listed
    servers = plan.stderr.split("servers: ", 1)[1].split(")", 1)[0].split(", ")
    peers = [t.name for t in default_peer_targets(REPO / "bench" / "peers")]
    assert servers == ["beast", "hello-c", "hello-py", *peers]
    assert re.search(r"planned \d+\.\d min", plan.stderr)
