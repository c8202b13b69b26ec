"""`loadbench serve` runs the native server in the foreground; Ctrl-C stops it with counters."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from loadbench.cli._cpus import parse_cpu_list as parse_cpus
from loadbench.core.errors import ConfigError


def _start(*args: str) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "loadbench", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.strip())
        if "Ctrl-C" in line:
            return proc, lines
    proc.kill()
    raise AssertionError(f"serve did not start: {lines} {proc.stderr.read()}")


def test_serve_until_ctrl_c_prints_counters():
    proc, lines = _start("--workers", "2", "--tls", "--cpus", "0")
    try:
        urls = [
            re.search(r"https?://\S+", line).group(0) for line in lines if "listening on" in line
        ]
        assert len(urls) == 2 and urls[0].startswith("http://") and urls[1].startswith("https://")
        port = int(urls[0].rsplit(":", 1)[1].rstrip("/"))
        pid = int(re.search(r"pid (\d+)", lines[-1]).group(1))
        assert os.sched_getaffinity(pid) == {0}
        for _ in range(3):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/json")
            assert conn.getresponse().status == 200
            conn.close()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "3 requests (json 3)" in out
    assert "3 connections accepted" in out


def test_serve_port_in_use_is_one_clear_error():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "loadbench", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=20,
        )
    assert proc.returncode == 1
    assert proc.stderr.startswith("loadbench: error: ")
    assert "in use" in proc.stderr and "Traceback" not in proc.stderr


def test_serve_bad_flag_exit_2():
    proc = subprocess.run(
        [sys.executable, "-m", "loadbench", "serve", "--cpus", "x-y"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode == 2 and "loadbench: error: --cpus" in proc.stderr


def test_parse_cpus():
    assert parse_cpus("0") == [0]
    assert parse_cpus("0-2,5") == [0, 1, 2, 5]
    assert parse_cpus("1, 0-1") == [0, 1]
    for bad in ("", "a", "3-1", "-1"):
        with pytest.raises(ConfigError):
            parse_cpus(bad)


def test_serve_h2_flags_reach_the_server_and_its_counters():
    proc, lines = _start("--h2-max-streams", "7", "--h2-max-requests", "50")
    try:
        url = next(
            re.search(r"http://\S+", line).group(0) for line in lines if "listening on" in line
        )
        port = int(url.rsplit(":", 1)[1].rstrip("/"))
        import shutil

        if shutil.which("nghttp") is None:
            pytest.skip("nghttp not found: apt-get install nghttp2-client")
        out = subprocess.run(
            ["nghttp", "-nv", f"http://127.0.0.1:{port}/json"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout
        assert "[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):7]" in out, out
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "HTTP/2: 1 requests on 1 connections" in out, out


def test_serve_bad_h2_flag_exit_2():
    proc = subprocess.run(
        [sys.executable, "-m", "loadbench", "serve", "--h2-max-streams", "0"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode == 2 and "loadbench: error: --h2-max-streams" in proc.stderr
