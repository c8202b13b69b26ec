"""Start-up contract, counters, graceful stop and start-up errors of the native binary."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest
from server_helpers import connect, read_response

from loadbench import ServerError, ServerProcess, server_binary


def test_ready_line_names_the_bound_ports(beast_server):
    ready = beast_server.ready
    assert ready["event"] == "ready"
    assert ready["pid"] == beast_server.pid
    assert ready["host"] == "127.0.0.1"
    assert isinstance(ready["http_port"], int) and ready["http_port"] > 0
    assert ready["https_port"] is None
    assert ready["workers"] == 1


@pytest.mark.parametrize("accept", ["reuseport", "shared"])
def test_counters_are_exact(server_factory, accept):
    server = server_factory(workers=2, accept=accept)
    port = server.http_port
    expected = {"plaintext": 0, "json": 0, "echo": 0, "delay": 0, "not_found": 0}
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=5) for _ in range(4)]
    plan = [
        ("GET", "/", "plaintext"),
        ("GET", "/plaintext", "plaintext"),
        ("GET", "/json", "json"),
        ("POST", "/echo", "echo"),
        ("GET", "/delay?ms=1", "delay"),
        ("GET", "/x", "not_found"),
    ]
    for i in range(60):
        method, path, kind = plan[i % len(plan)]
        conn = conns[i % len(conns)]
        conn.request(method, path, body=b"e" if method == "POST" else None)
        conn.getresponse().read()
        expected[kind] += 1
    for conn in conns:
        conn.close()
    with connect(port) as sock:  # one malformed request on a fifth connection
        sock.sendall(b"NOT HTTP\r\n\r\n")
        assert read_response(sock.makefile("rb")).status == 400
    stopped = server.stop()
    assert stopped["event"] == "stopped"
    assert stopped["connections_accepted"] == 5
    assert stopped["connections_open"] == 0
    for kind, n in expected.items():
        assert stopped["requests"][kind] == n, kind
    assert stopped["requests"]["bad_request"] == 1
    assert stopped["requests_total"] == 61


@pytest.mark.parametrize("accept", ["reuseport", "shared"])
def test_both_accept_strategies_use_every_worker(server_factory, accept):
    server = server_factory(workers=2, accept=accept)
    results = []

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=5)
        for _ in range(20):
            conn.request("GET", "/")
            results.append(conn.getresponse().read())
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [b"Hello, World!\n"] * 160
    # One thread per worker plus the main thread that waits for the stop signal.
    assert len(os.listdir(f"/proc/{server.pid}/task")) == 3


def test_graceful_stop_finishes_the_in_flight_response(beast_server):
    with connect(beast_server.http_port) as sock:
        sock.sendall(b"GET /delay?ms=500 HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.1)  # the request is in flight
        beast_server.proc.send_signal(signal.SIGTERM)
        resp = read_response(sock.makefile("rb"))
        assert resp.status == 200 and resp.body == b"Hello, World!\n"
    assert beast_server.proc.wait(timeout=5) == 0
    out = beast_server.proc.stdout.read().decode()
    stopped = json.loads(out.strip().splitlines()[-1])
    assert stopped["event"] == "stopped" and stopped["requests"]["delay"] == 1


def test_stop_refuses_new_connections_and_closes_idle_ones(beast_server):
    idle = connect(beast_server.http_port)
    idle.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_response(idle.makefile("rb")).status == 200
    port = beast_server.http_port
    stopped = beast_server.stop()  # must not wait for the idle keep-alive connection
    assert stopped["connections_open"] == 0
    idle.settimeout(2)
    assert idle.recv(10) == b""
    idle.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1)


def test_sigint_stops_gracefully_too(beast_server):
    conn = http.client.HTTPConnection("127.0.0.1", beast_server.http_port, timeout=5)
    conn.request("GET", "/json")
    assert conn.getresponse().read()
    conn.close()
    beast_server.proc.send_signal(
        signal.SIGINT
    )  # e.g. a terminal's Ctrl-C reaching the server itself
    assert beast_server.proc.wait(timeout=5) == 0
    # The parent still gets the counters line the server printed on its way out.
    stopped = beast_server.stop()
    assert stopped["event"] == "stopped" and stopped["requests"]["json"] == 1


def _run_binary(*args: str) -> tuple[int, dict, str]:
    proc = subprocess.run([str(server_binary()), *args], capture_output=True, text=True, timeout=10)
    first = proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else "{}"
    return proc.returncode, json.loads(first), proc.stderr


def test_port_in_use_is_a_clear_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for accept in ("reuseport", "shared"):
            code, line, stderr = _run_binary("--port", str(port), "--accept", accept)
            assert code != 0
            assert line["event"] == "error"
            assert f"127.0.0.1:{port}" in line["error"] and "in use" in line["error"]
            assert line["error"] in stderr


def test_port_in_use_by_another_loadbench_server_is_an_error(beast_server):
    code, line, _ = _run_binary("--port", str(beast_server.http_port))
    assert code != 0 and "in use" in line["error"]


def test_server_process_raises_server_error_on_port_in_use(beast_server):
    with pytest.raises(ServerError, match="in use"):
        ServerProcess(port=beast_server.http_port).start()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--workers", "0"], "--workers"),
        (["--port", "70000"], "--port"),
        (["--bogus"], "unknown flag '--bogus'"),
        (["--accept", "magic"], "--accept"),
        (["--no-http"], "nothing to serve"),
        (["--tls", "--cert", "/nonexistent/cert.pem"], "--cert and --key"),
    ],
)
def test_bad_flags_are_one_clear_error(args, message):
    code, line, stderr = _run_binary(*args)
    assert code == 2
    assert line["event"] == "error" and message in line["error"]
    assert "loadbench-server: error:" in stderr


def test_unreadable_certificate_is_a_clear_error(tmp_path):
    key = tmp_path / "key.pem"
    key.write_text("not a key")
    code, line, _ = _run_binary("--tls", "--cert", str(tmp_path / "missing.pem"), "--key", str(key))
    assert code == 1
    assert "cannot load certificate" in line["error"] and "missing.pem" in line["error"]


def test_help_lists_the_flags():
    proc = subprocess.run(
        [str(server_binary()), "--help"], capture_output=True, text=True, timeout=10
    )
    assert proc.returncode == 0
    for flag in ("--port", "--tls", "--workers", "--max-body", "--header-timeout-ms", "--accept"):
        assert flag in proc.stdout
