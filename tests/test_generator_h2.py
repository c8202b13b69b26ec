"""HTTP/2 in the generator (issue 12), against servers no one here wrote - nghttpd, nginx, h2o -
and against our own loadbench-server (h2c on its HTTP port, ALPN h2 on its TLS port).

h2c is prior knowledge (the connection preface, as h2load); https:// offers ALPN "h2" only, and a
server that does not select it fails the connection with one clear error (no silent fallback).
A missing server is a skip that names the package to install.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest
from nginx_access_log import Nginx, nginx_with_access_log

import loadbench
from loadbench import ConfigError
from loadbench.cli import main
from loadbench.core.certificates import self_signed


def need(tool: str, package: str) -> str:
    path = shutil.which(tool) or (
        f"/usr/sbin/{tool}" if os.path.exists(f"/usr/sbin/{tool}") else None
    )
    if path is None:
        pytest.skip(f"{tool} not found: apt-get install {package}")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def key_and_cert(folder: Path) -> tuple[Path, Path]:
    cert, key = self_signed(folder / "cert.pem", folder / "key.pem", days=2)
    return key, cert


# --- our own server ---------------------------------------------------------------------
def test_h2c_exact_count_against_loadbench_server(server_factory) -> None:
    server = server_factory()
    r = loadbench.run(
        server.url("/plaintext"), connections=4, requests=5000, protocol="h2", streams=10
    )
    assert r.responses == 5000 and r.status_codes == {200: 5000}, r.first_error
    assert r.error_count == 0 and r.unfinished == 0
    assert r.connections_opened == 4
    assert r.config["protocol"] == "h2" and r.config["streams"] == 10
    assert r.latency.count == 5000
    d = r.to_dict()
    assert (
        d["config"]["protocol"] == "h2"
        and d["goaways"] == 0
        and d["retried"] == 0
        and d["streams_reset"] == {}
    )
    back = loadbench.Result.from_dict(d)
    assert back.goaways == 0 and back.streams_reset == {}
    assert any("HTTP/2 (h2c" in line for line in r.summary_lines())


def test_h2_alpn_exact_count_against_loadbench_server(server_factory) -> None:
    server = server_factory(tls=True, http=False)
    r = loadbench.run(
        server.url("/plaintext", https=True),
        connections=3,
        requests=3000,
        protocol="h2",
        streams=10,
    )
    assert r.responses == 3000 and r.error_count == 0, r.first_error
    assert r.tls_handshakes == 3
    assert any("negotiated with ALPN" in line for line in r.summary_lines())


def test_multiplexing_one_connection_ten_streams_is_much_faster(server_factory) -> None:
    server = server_factory()
    url = server.url("/delay?ms=200")
    t0 = time.monotonic()
    one = loadbench.run(url, connections=1, requests=20, protocol="h2", streams=1)
    serial = time.monotonic() - t0
    t0 = time.monotonic()
    ten = loadbench.run(url, connections=1, requests=20, protocol="h2", streams=10)
    multiplexed = time.monotonic() - t0
    assert one.responses == ten.responses == 20 and one.error_count == ten.error_count == 0
    assert ten.connections_opened == 1
    assert serial >= 4.0 and multiplexed * 4 <= serial, (serial, multiplexed)


def test_server_max_concurrent_streams_below_streams_is_no_error(server_factory) -> None:
    server = server_factory(h2_max_streams=2)
    r = loadbench.run(
        server.url("/plaintext"), connections=2, requests=2000, protocol="h2", streams=10
    )
    assert r.responses == 2000 and r.error_count == 0 and r.unfinished == 0, r.first_error
    assert r.streams_reset == {}


def test_goaway_after_n_requests_reconnects_without_errors(server_factory) -> None:
    server = server_factory(h2_max_requests=50)
    r = loadbench.run(
        server.url("/plaintext"), connections=2, requests=1000, protocol="h2", streams=8
    )
    assert r.responses == 1000 and r.error_count == 0 and r.unfinished == 0, r.first_error
    assert r.goaways >= 1000 // 50 - 2
    assert r.reconnects >= r.goaways - 2
    assert r.connections_opened >= 1000 // 50


def test_one_mib_echo_body(server_factory) -> None:
    server = server_factory()
    body = bytes(range(256)) * 4096  # 1 MiB
    r = loadbench.run(
        server.url("/echo"),
        connections=1,
        requests=4,
        method="POST",
        body=body,
        protocol="h2",
        streams=2,
        timeout=30,
    )
    assert r.responses == 4 and r.status_codes == {200: 4}, r.first_error
    assert r.bytes_read >= 4 * len(body) and r.bytes_written >= 4 * len(body)


def test_connection_per_request_over_h2(server_factory) -> None:
    server = server_factory()
    r = loadbench.run(
        server.url("/plaintext"),
        connections=2,
        requests=60,
        protocol="h2",
        streams=10,
        keepalive=False,
    )
    assert r.responses == 60 and r.error_count == 0, r.first_error
    assert r.connections_opened == 60 and r.reconnects == 0


def test_tls_server_without_h2_fails_with_one_clear_error(server_factory) -> None:
    server = server_factory(tls=True, http=False, h2=False)
    r = loadbench.run(
        server.url("/plaintext", https=True), connections=1, requests=3, protocol="h2"
    )
    assert r.responses == 0 and r.errors["connect"] == 3
    assert "ALPN" in r.first_error and "did not select h2" in r.first_error, r.first_error


def test_open_loop_over_h2(server_factory) -> None:
    server = server_factory()
    r = loadbench.run(
        server.url("/plaintext"), connections=1, duration=1.0, rate=400, protocol="h2", streams=10
    )
    assert r.open_loop and r.error_count == 0 and r.unfinished == 0, r.first_error
    assert r.due == r.responses and 350 <= r.responses <= 450
    # the one connection was open (SETTINGS exchanged) before the schedule started
    assert r.preconnected == 1 and r.connections_opened == 0


def test_open_loop_over_h2c_reads_at_its_sends_timed_by_arrival(server_factory) -> None:
    # 1000 req/s over h2c: the loop reads the responses when it wakes for the next send, ~1 ms
    # later, each timed by its arrival in the kernel - none could read ~0.9 ms otherwise.
    server = server_factory()
    r = loadbench.run(
        server.url("/plaintext"), connections=2, requests=600, rate=1000, protocol="h2", streams=10
    )
    assert r.error_count == 0 and r.due == r.responses == 600, r.first_error
    assert r.to_dict()["config"]["batch_reads"] is True
    assert r.latency_uncorrected.min < 500  # us
    # at most one wake-up per send (a loop woken late sends what fell due together: fewer)
    assert 1 <= r.wakeups <= 1.2 * r.due + 60


def test_open_loop_delay_uses_stream_slots_before_growing(server_factory) -> None:
    # 50/s of 100 ms each = 5 in flight: one connection with 10 streams carries them all.
    server = server_factory()
    r = loadbench.run(
        server.url("/delay?ms=100"),
        connections=1,
        duration=1.0,
        rate=50,
        protocol="h2",
        streams=10,
        max_connections=4,
    )
    assert r.error_count == 0 and r.due == r.responses, r.first_error
    assert r.preconnected == 1 and r.connections_opened == 0  # never grown


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="protocol"):
        loadbench.run("http://127.0.0.1:1/", requests=1, protocol="spdy")
    with pytest.raises(ConfigError, match="streams"):
        loadbench.run("http://127.0.0.1:1/", requests=1, protocol="h2", streams=0)
    with pytest.raises(ConfigError, match="HTTP/2"):
        loadbench.run("http://127.0.0.1:1/", requests=1, streams=4)
    prepare = importlib.import_module("loadbench.core.run").prepare
    config, engine_config = prepare("http://127.0.0.1:1/", requests=1, protocol="h2", streams=3)
    assert config["protocol"] == "h2" and engine_config.h2 and engine_config.streams == 3


def test_cli_h2_flags(server_factory, tmp_path: Path) -> None:
    server = server_factory()
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadbench",
            "run",
            "--h2",
            "-p",
            "5",
            "-c",
            "2",
            "-n",
            "500",
            "--no-progress",
            "--json",
            str(out),
            server.url("/plaintext"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    text = proc.stdout.decode()
    assert "HTTP/2 (h2c" in text and "5 streams" in text, text
    d = json.loads(out.read_text())
    assert d["config"]["protocol"] == "h2" and d["config"]["streams"] == 5 and d["responses"] == 500


# --- nghttpd ------------------------------------------------------------------------------
@pytest.fixture
def nghttpd_h2c(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    binary = need("nghttpd", "nghttp2-server")
    (tmp_path / "index.html").write_bytes(b"hello from nghttpd\n")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--no-tls", "-d", str(tmp_path), "--max-concurrent-streams", "3", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, proc)
        yield port, tmp_path
    finally:
        stop(proc)


def test_nghttpd_h2c_exact_and_max_concurrent_streams_below_streams(nghttpd_h2c) -> None:
    port, _ = nghttpd_h2c
    r = loadbench.run(
        f"http://127.0.0.1:{port}/index.html",
        connections=2,
        requests=1000,
        protocol="h2",
        streams=10,
    )
    assert r.responses == 1000 and r.status_codes == {200: 1000}, r.first_error
    assert r.error_count == 0 and r.streams_reset == {}


def test_nghttpd_tls_h2(tmp_path: Path) -> None:
    binary = need("nghttpd", "nghttp2-server")
    (tmp_path / "index.html").write_bytes(b"hello\n")
    key, cert = key_and_cert(tmp_path)
    port = free_port()
    proc = subprocess.Popen(
        [binary, "-d", str(tmp_path), str(port), str(key), str(cert)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, proc)
        r = loadbench.run(
            f"https://127.0.0.1:{port}/index.html",
            connections=2,
            requests=500,
            protocol="h2",
            streams=10,
        )
    finally:
        stop(proc)
    assert r.responses == 500 and r.error_count == 0, r.first_error


# --- nginx (http2 over TLS, access log, keepalive_requests -> GOAWAY) ---------------------
@pytest.fixture
def nginx_h2(request) -> Iterator[Nginx]:
    need("nginx", "nginx-light")
    keepalive_requests = getattr(request, "param", 100000)
    with nginx_with_access_log(keepalive_requests, h2_over_tls=True) as nginx:
        yield nginx


def test_nginx_h2_exact_count_vs_access_log(nginx_h2: Nginx) -> None:
    # The setting: c = 25, 10 streams each.
    r = loadbench.run(
        f"https://127.0.0.1:{nginx_h2.port}/x",
        connections=25,
        requests=5000,
        protocol="h2",
        streams=10,
    )
    assert r.responses == 5000 and r.error_count == 0, r.first_error
    assert r.tls_handshakes == 25
    lines = nginx_h2.access_log_lines()
    assert len(lines) == 5000
    assert all('"GET /x HTTP/2.0" 200' in line for line in lines), lines[:3]


@pytest.mark.parametrize("nginx_h2", [40], indirect=True)
def test_nginx_keepalive_requests_goaway_no_errors(nginx_h2: Nginx) -> None:
    r = loadbench.run(
        f"https://127.0.0.1:{nginx_h2.port}/x",
        connections=2,
        requests=1000,
        protocol="h2",
        streams=10,
    )
    assert r.responses == 1000 and r.error_count == 0 and r.unfinished == 0, r.first_error
    assert r.goaways >= 1000 // 40 - 2 and r.reconnects >= 1
    assert len(nginx_h2.access_log_lines()) == 1000


# --- h2o (h2c) -------------------------------------------------------------------------------
def test_h2o_h2c_exact() -> None:
    binary = need("h2o", "h2o")
    run_dir = Path(tempfile.mkdtemp(prefix="lb-h2o-h2-"))
    os.chmod(run_dir, 0o777)  # h2o drops to `nobody` when started as root
    try:
        (run_dir / "docs").mkdir()
        (run_dir / "docs" / "index.html").write_bytes(b"hello from h2o\n")
        port = free_port()
        conf = run_dir / "h2o.conf"
        user = "user: nobody\n" if os.geteuid() == 0 else ""
        conf.write_text(
            user
            + f"""listen:
  host: 127.0.0.1
  port: {port}
num-threads: 1
access-log: {run_dir}/access.log
error-log: {run_dir}/error.log
hosts:
  default:
    paths:
      /:
        file.dir: {run_dir}/docs
"""
        )
        proc = subprocess.Popen(
            [binary, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            wait_port(port, proc)
            r = loadbench.run(
                f"http://127.0.0.1:{port}/index.html",
                connections=25,
                requests=1500,
                protocol="h2",
                streams=10,
            )
            time.sleep(0.2)
            lines = (run_dir / "access.log").read_text().splitlines()
        finally:
            stop(proc)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    assert r.responses == 1500 and r.error_count == 0, r.first_error
    assert len(lines) == 1500 and all("HTTP/2" in line for line in lines), lines[:3]


def test_timeouts_are_per_stream_and_the_connection_goes_on(server_factory) -> None:
    server = server_factory()
    r = loadbench.run(
        server.url("/"),
        connections=1,
        duration=2,
        protocol="h2",
        streams=4,
        timeout=1,
        requests_list=[{"path": "/delay?ms=3000"}, {"path": "/plaintext"}],
    )
    assert r.errors["timeout"] >= 4 and r.responses >= 2, r.errors
    assert "stream cancelled" in r.first_error
    assert r.connections_opened == 1
    assert r.responses + r.error_count + r.unfinished > 0


@pytest.mark.parametrize("bits", [None, 16, 20])
def test_the_window_offered_is_two_to_the_window_bits_minus_one(bits) -> None:
    """h2_window_bits (--h2-window-bits, h2load's -w/-W) sets the client's SETTINGS_INITIAL_WINDOW_SIZE
    and raises the connection window (65 535 at the start, RFC 9113 6.9.2) to the same 2^N - 1
    with one WINDOW_UPDATE; the default is h2load's 30. Read off the frames a scripted server
    received."""
    from hostile_h2_server import HostileH2Server

    window = (1 << (bits or 30)) - 1
    with HostileH2Server("honest", max_seconds=4) as server:
        result = loadbench.run(
            server.url("/"), connections=2, requests=20, protocol="h2", prime=False,
            **({"h2_window_bits": bits} if bits else {}),
        )  # fmt: skip
    assert result.responses == 20 and result.error_count == 0, result.first_error
    assert result.config["h2_window_bits"] == (bits or 30)
    assert len(server.client_settings) == 2
    assert all(s[0x4] == window and s[0x2] == 0 for s in server.client_settings)  # push off
    expected = [window - 65_535] * 2 if window > 65_535 else []
    assert server.client_window_updates == expected


def test_a_window_outside_one_to_thirty_bits_is_one_clear_error() -> None:
    for bits in (0, 31):
        with pytest.raises(ConfigError, match="h2_window_bits must be from 1 to 30"):
            loadbench.run("http://127.0.0.1:9/", requests=1, protocol="h2", h2_window_bits=bits)
    assert main(["run", "http://127.0.0.1:9/", "--h2", "-n", "1", "--h2-window-bits", "31"]) == 2
