"""`loadbench connections`: idle keep-alive connections held at minimal cost, memory per
connection of the generator and of the server (the C10k cell at a small N)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import loadbench
from loadbench.cli import main
from loadbench.core.connections import hold_shortfall
from loadbench.core.errors import ConfigError

N = 200


def test_cli_holds_n_connections_and_proves_them_live(beast_server, tmp_path: Path, capsys):
    out = tmp_path / "c.json"
    code = main(
        [
            "connections",
            beast_server.url("/"),
            "-c",
            str(N),
            "--sample-pid",
            str(beast_server.pid),
            "--json",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr()
    record = json.loads(out.read_text())
    assert record["connections_held"] == N
    assert record["requests_ok"] == N
    assert record["connect_failed"] == 0 and record["requests_failed"] == 0
    server = record["server"]
    assert server["accepted"] >= N  # the server held a descriptor for each before measuring
    assert server["rss_bytes_per_connection"] > 0
    assert server["pss_bytes_per_connection"] is not None
    generator = record["generator"]
    # An fd and a state byte per connection; the measured growth is page-granular noise at
    # this N, far below a buffer per connection (wrk keeps 8 KiB each).
    assert generator["holder_bytes_per_connection"] <= 16
    assert 0 <= generator["bytes_per_connection"] < 4096
    text = capsys.readouterr().out
    assert f"held {N:,} of {N:,} connections" in text and "per connection" in text
    # The server really served one request on each held connection.
    assert beast_server.stop()["requests_total"] >= N


def test_python_function_without_sample_pid(beast_server):
    record = loadbench.hold_connections(beast_server.url("/plaintext"), 50)
    assert record["connections_held"] == 50 and record["requests_ok"] == 50
    assert "server" not in record


def test_connections_the_server_dropped_are_not_counted_as_held(server_factory):
    server = server_factory(idle_timeout_ms=100)
    record = loadbench.hold_connections(
        server.url("/"), 20, sample_pid=server.pid, accept_timeout=2.0
    )
    # The server closes idle connections after 100 ms; the 0.2 s settle before measuring sees it.
    assert record["connections_held"] < 20
    assert record["requests_ok"] == record["connections_held"]
    # a sweep's hold cell would be FAIL, and say why in one line
    assert "connection(s) closed by the server before the measurement" in hold_shortfall(record)


def test_refused_connections_are_reported_not_raised():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        record = loadbench.hold_connections(f"http://127.0.0.1:{port}/", 5, timeout=5)
    assert record["connections_held"] == 0 and record["connect_failed"] == 5
    assert "refused" in record["first_error"].lower()


@pytest.mark.parametrize("url", ["https://127.0.0.1:1/", "ftp://x/", "http:///nohost"])
def test_bad_urls_are_config_errors(url):
    with pytest.raises(ConfigError):
        loadbench.hold_connections(url, 1)


def test_an_fd_limit_that_cannot_be_raised_is_said():
    code = (
        "import json, loadbench.core.connections as c; "
        "need = int(open('/proc/sys/fs/nr_open').read()) + 10; "
        "print(json.dumps(c.raise_fd_limit(need)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    limit, note = json.loads(out.stdout)
    assert "cannot be raised" in note and limit < 10**9


def test_bench_script_smoke_run(tmp_path: Path):
    bench = Path(__file__).resolve().parent.parent / "bench" / "memory_per_connection.py"
    out = subprocess.run(
        [
            sys.executable,
            str(bench),
            "--smoke",
            "--servers",
            "beast",
            "--generators",
            "",
            "-c",
            "50",
            "--out",
            str(tmp_path / "mem"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    records = [json.loads(line) for line in (tmp_path / "mem.jsonl").read_text().splitlines()]
    assert (
        records[0]["name"] == "beast"
        and records[0]["requests_ok"] == records[0]["connections_held"] > 0
    )
    assert "| beast |" in (tmp_path / "mem.md").read_text()
