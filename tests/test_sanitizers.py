"""ASan + UBSan: the C++ unit tests, and the sanitized server under real load.

One build with the fuzz targets in build/fuzz (clang, ASan + UBSan over the whole core, no Python
extension; native_build.instrumented_build), incremental after the first run; the wheel stays
optimised. The sanitized loadbench-server is driven by the
installed generator (loadbench.run: plaintext, JSON, echo POST, /delay, HTTPS with a
handshake per request) and by hostile raw clients, then stopped gracefully: it must exit 0
with no sanitizer report (memory errors, UB, leaks at exit) in its stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from abuse_helpers import reset_close, served, served_tls
from server_helpers import connect, read_until_closed

import loadbench

# The first test of this module (or of test_fuzz.py) in a worker may wait for the whole
# instrumented build of the C++ core (minutes on 2 cores; the session's `instrumented_build_dir`),
# which the default 300 s per-test limit does not cover.
pytestmark = pytest.mark.timeout(1800)

SANITIZER_ENV = {
    # exitcode: a report must not be mistaken for a clean exit; leaks are checked at exit.
    "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:exitcode=66:strict_string_checks=1:detect_stack_use_after_return=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}
REPORT_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: ")


def sanitizer_reports(text: str) -> list[str]:
    return [line for line in text.splitlines() if any(m in line for m in REPORT_MARKERS)]


@pytest.fixture
def asan_build(instrumented_build_dir: Path) -> Path:
    return instrumented_build_dir


def test_cpp_unit_tests_under_asan_and_ubsan(asan_build: Path) -> None:
    proc = subprocess.run(
        [str(asan_build / "loadbench_tests")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, **SANITIZER_ENV, "GTEST_COLOR": "no"},
        timeout=300,
    )
    log = proc.stdout.decode(errors="replace")
    assert proc.returncode == 0, log[-8000:]
    assert not sanitizer_reports(log), log[-8000:]
    assert "[  PASSED  ]" in log


def h2_traffic(http: int, https: int, tmp_path: Path) -> socket.socket:
    """HTTP/2 on the sanitized server: h2load over h2c and ALPN h2 (every route), and hostile
    h2 clients (a malformed frame, a reset mid-stream, streams left open at shutdown)."""
    h2load = shutil.which("h2load")
    if h2load is None:
        pytest.fail(
            "h2load not found: apt-get install nghttp2-client (bash .ci/install.sh test)",
            pytrace=False,
        )
    body = tmp_path / "body.bin"
    body.write_bytes(b"h" * 70_000)  # more than one flow-control window
    for base in (f"http://127.0.0.1:{http}", f"https://127.0.0.1:{https}"):
        for extra in (
            [f"{base}/plaintext", f"{base}/json", f"{base}/delay?ms=2", f"{base}/nope"],
            ["-d", str(body), f"{base}/echo"],
        ):
            proc = subprocess.run(
                [h2load, "-n", "400", "-c", "2", "-m", "8", *extra],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=120,
            )
            out = proc.stdout.decode(errors="replace")
            assert proc.returncode == 0 and " 400 done, " in out and " 0 errored" in out, out
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes.fromhex("000000040000000000")
    get = (
        bytes.fromhex("00000e010500000001") + b"\x82\x84\x86\x41\x09127.0.0.1"
    )  # GET / (+ :authority)
    with connect(http) as sock:  # DATA on stream 0: GOAWAY PROTOCOL_ERROR
        sock.sendall(preface + get + bytes.fromhex("000001000000000000") + b"x")
        read_until_closed(sock)
    for _ in range(3):  # a POST whose body never ends, then a reset
        sock = connect(http)
        sock.sendall(
            preface
            + bytes.fromhex("00000e010400000001")
            + b"\x83\x86\x84\x41\x09127.0.0.1"
            + bytes.fromhex("000400000000000001")
            + b"abcd"
        )
        time.sleep(0.05)
        reset_close(sock)
    # Left open: a /delay stream in flight when the server is stopped (GOAWAY, then it finishes).
    path = b"/delay?ms=300"
    delay = b"\x82\x86\xbe\x04" + bytes([len(path)]) + path  # :path as a literal without indexing
    sock = connect(http)
    sock.sendall(preface + get + bytes.fromhex("0000%02x0105000000" % len(delay) + "03") + delay)
    return sock


def test_sanitized_server_under_real_load_exits_clean(asan_build: Path, tmp_path: Path) -> None:
    stderr_path = tmp_path / "server.stderr"
    argv = [
        str(asan_build / "loadbench-server"),
        "--port",
        "0",
        "--tls",
        "--tls-port",
        "0",
        "--workers",
        "2",
        "--header-timeout-ms",
        "500",
        "--idle-timeout-ms",
        "2000",
    ]
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=stderr, env={**os.environ, **SANITIZER_ENV}
        )
    try:
        ready = json.loads(proc.stdout.readline())
        assert ready["event"] == "ready", ready
        http, https = ready["http_port"], ready["https_port"]
        base = f"http://127.0.0.1:{http}"

        runs = [
            loadbench.run(f"{base}/plaintext", connections=8, threads=2, duration=1.5),
            loadbench.run(f"{base}/json", connections=4, duration=1.0),
            loadbench.run(
                f"{base}/echo",
                connections=4,
                duration=1.0,
                method="POST",
                body=b"e" * 3000,
                headers={"Content-Type": "application/x-test"},
            ),
            loadbench.run(f"{base}/delay?ms=5", connections=4, duration=1.0),
            loadbench.run(
                f"https://127.0.0.1:{https}/plaintext", connections=2, duration=1.0, keepalive=False
            ),
        ]
        for r in runs:
            assert r.responses > 0 and r.error_count == 0, (r.url, r.errors, r.first_error)
            assert set(r.status_codes) == {200}, (r.url, r.status_codes)

        # Hostile clients on the same sanitized process.
        for raw in (
            b"NOT HTTP\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 20000 + b"\r\n\r\n",
            b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;"
            + b"x" * 20000,
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 9999999\r\n\r\n",
        ):
            with connect(http) as sock:
                sock.sendall(raw)
                read_until_closed(sock)
        for _ in range(5):
            sock = connect(http)
            sock.sendall(
                b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n" + b"v" * 200000
            )
            reset_close(sock)
            sock = connect(https)
            sock.sendall(os.urandom(600))
            reset_close(sock)
        assert served(http) and served_tls(https)
        open_h2 = h2_traffic(http, https, tmp_path)
        time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    with open_h2:
        assert (
            read_until_closed(open_h2).count(b"Hello, World!") == 2
        )  # /delay answered after the GOAWAY
    log = stderr_path.read_text(errors="replace")
    assert not sanitizer_reports(log), log[-8000:]
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{log[-8000:]}"
    stopped = json.loads(out.decode().strip().splitlines()[-1])
    assert stopped["event"] == "stopped" and stopped["connections_open"] == 0
    assert stopped["requests"]["plaintext"] >= runs[0].responses
