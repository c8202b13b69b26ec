"""The opt-in TCP exchanges for connection-setup runs, as the server's side of the socket sees
them: `ack_with_request` (the handshake's last ACK rides on the request) and `rst_close` (a
connection the server has closed is closed with RST). Each test's server counts what arrived
on every connection (TCP_INFO's segment count, data waiting at accept, EOF or ECONNRESET after
its own FIN), so the assertions are exact, not timings."""

from __future__ import annotations

import socket
import ssl
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_sweep_protocols import FakeRun
from test_tls_library import make_cert

import loadbench
from loadbench import Sweep, Target
from loadbench.core.errors import ConfigError
from loadbench.report import document as report
from loadbench.sweep.file import sweep_from_dict

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
TCPI_SEGS_IN = 140  # offset of tcpi_segs_in in struct tcp_info (Linux >= 4.2)


class OneByOneServer:
    """Serves `n` connections one after another on 127.0.0.1 and records, per connection, what
    the kernel had delivered at accept and how the client's side ended."""

    def __init__(
        self, n: int, *, close: str = "fin-with-response", tls: ssl.SSLContext | None = None
    ):
        self.n, self.close, self.tls = n, close, tls
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.listener.settimeout(20)
        self.port = self.listener.getsockname()[1]
        self.seen: list[dict] = []
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/"

    def _serve(self) -> None:
        try:
            for _ in range(self.n):
                conn, _ = self.listener.accept()
                with conn:
                    self.seen.append(self._one(conn))
        except BaseException as e:  # reported by join()
            self.failure = e
        finally:
            self.listener.close()

    def _one(self, conn: socket.socket) -> dict:
        record: dict = {}
        try:
            record["data_at_accept"] = bool(conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except BlockingIOError:
            record["data_at_accept"] = False
        conn.settimeout(10)
        stream = self.tls.wrap_socket(conn, server_side=True) if self.tls else conn
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = stream.recv(4096)
            assert chunk, "the client closed before its request"
            data += chunk
        if self.tls:
            stream.sendall(RESPONSE)
            return record
        record["segments_in"] = struct.unpack_from(
            "I", conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232), TCPI_SEGS_IN
        )[0]
        if self.close == "fin-with-response":
            # Response and FIN in one segment (corked), so the client always has our FIN when
            # the response completes: the case rst_close acts on.
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
            conn.sendall(RESPONSE)
            conn.shutdown(socket.SHUT_WR)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
        else:  # "fin-later": the response now, our FIN only after the client has ended its side
            conn.sendall(RESPONSE)
        try:
            record["client_end"] = "eof" if conn.recv(4096) == b"" else "data"
        except ConnectionResetError:
            record["client_end"] = "reset"
        return record

    def join(self) -> list[dict]:
        self.thread.join(30)
        if self.failure is not None:
            raise self.failure
        return self.seen


def test_ack_with_request_the_request_completes_the_handshake():
    n = 40
    for ack_with_request, segments, at_accept in ((False, 3, False), (True, 2, True)):
        server = OneByOneServer(n)
        r = loadbench.run(
            server.url(),
            connections=1,
            requests=n,
            keepalive=False,
            ack_with_request=ack_with_request,
            prime=False,  # the server counts the run's own connections only
        )
        seen = server.join()
        assert r.responses == n and r.connections_opened == n and not any(r.errors.values())
        # SYN, ACK, request - or SYN, request carrying the ACK. Without the option the pure ACK
        # completes the handshake alone, so accept() returns before any request byte is there.
        assert [s["segments_in"] for s in seen] == [segments] * n, ack_with_request
        if at_accept:
            assert all(s["data_at_accept"] for s in seen)
        assert r.config["ack_with_request"] is ack_with_request


def test_ack_with_request_over_tls_the_client_hello_completes_the_handshake(tmp_path: Path):
    cert, key = make_cert(tmp_path, "server", "/CN=localhost", san="DNS:localhost,IP:127.0.0.1")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    n = 10
    server = OneByOneServer(n, tls=context)
    r = loadbench.run(
        server.url(),
        connections=1,
        requests=n,
        keepalive=False,
        ack_with_request=True,
        prime=False,  # the server counts the run's own connections only
    )
    seen = server.join()
    assert r.responses == n and r.tls_handshakes == n
    assert all(s["data_at_accept"] for s in seen)


def test_ack_with_request_does_not_stall_a_server_that_writes_in_pieces(tmp_path: Path):
    """Quick-ACK off is the kernel's interactive mode, which delays every later ACK by 40 ms or
    more. A server with Nagle's algorithm on that writes its TLS flight record by record (tlslite-ng
    does) cannot send the next record before the last one is ACKed: the generator turns quick ACKs
    back on once the ClientHello has carried the handshake's ACK, so no handshake waits for a
    delayed ACK."""
    pytest.importorskip("tlslite")
    cert, key = make_cert(tmp_path, "server", "/CN=localhost")
    proc = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("forged_tls_server.py")),
            str(cert),
            str(key),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = f"https://localhost:{int(proc.stdout.readline())}/"
        r = loadbench.run(
            url, connections=1, requests=10, keepalive=False, ack_with_request=True, timeout=10
        )
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert r.responses == 10, r.first_error
    # A delayed ACK is >= 40 ms on Linux, and a stalled flight waits for two of them: every
    # handshake through the same code would take >= 80 ms. One that took less than a single
    # delayed ACK did not wait for any. (The median said the same on a quiet machine, but the
    # server is pure-Python TLS: beside a compile its CPU alone pushed the median to 73 ms,
    # while the fastest handshake still took 19 ms.)
    latency = r.latency_summary()
    assert latency["min"] < 40_000, latency


def test_rst_close_resets_only_connections_the_server_has_closed():
    n = 40
    for rst_close, end in ((False, "eof"), (True, "reset")):
        server = OneByOneServer(n)
        r = loadbench.run(
            server.url(),
            connections=1,
            requests=n,
            keepalive=False,
            rst_close=rst_close,
            prime=False,  # the server counts the run's own connections only
        )
        seen = server.join()
        assert r.responses == n and not any(r.errors.values())
        assert [s["client_end"] for s in seen] == [end] * n, rst_close
    # A server that has not closed when the response is complete gets a FIN as always: the
    # reset never lands on a socket whose owner may still read from it.
    server = OneByOneServer(n, close="fin-later")
    r = loadbench.run(
        server.url(), connections=1, requests=n, keepalive=False, rst_close=True, prime=False
    )
    assert r.responses == n
    assert [s["client_end"] for s in server.join()] == ["eof"] * n


def test_both_against_the_beast_server_exact_counts_and_the_summary_says_so(beast_server):
    r = loadbench.run(
        beast_server.url("/plaintext"),
        connections=4,
        requests=2000,
        keepalive=False,
        ack_with_request=True,
        rst_close=True,
    )
    assert r.responses == 2000 and r.connections_opened == 2000 and r.status_codes == {200: 2000}
    assert not any(r.errors.values())
    text = "\n".join(r.summary_lines())
    assert "the handshake's last ACK rides on the request" in text and "closed with RST" in text
    plain = loadbench.run(
        beast_server.url("/plaintext"), connections=2, requests=20, keepalive=False
    )
    assert "TCP exchange" not in "\n".join(plain.summary_lines())


def test_ack_with_request_needs_a_closed_loop():
    with pytest.raises(ConfigError, match="ack_with_request needs a closed loop"):
        loadbench.run("http://127.0.0.1:1/", rate=100, duration=1, ack_with_request=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadbench",
            "run",
            "http://127.0.0.1:1/",
            "-R",
            "100",
            "-d",
            "1s",
            "--ack-with-request",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "needs a closed loop" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_flags_reach_the_result(beast_server, tmp_path: Path):
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadbench",
            "run",
            beast_server.url("/plaintext"),
            "-n",
            "50",
            "-c",
            "2",
            "--disable-keepalive",
            "--ack-with-request",
            "--rst-close",
            "--no-progress",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "TCP exchange:" in proc.stdout
    text = out.read_text()
    assert '"ack_with_request": true' in text and '"rst_close": true' in text


def test_sweep_applies_them_to_connection_setup_cells_only(tmp_path: Path):
    assert sweep_from_dict({"ack_with_request": True, "rst_close": True}).rst_close is True
    with pytest.raises(ConfigError, match="rst_close"):
        sweep_from_dict({"rst_close": "yes"})
    fake = FakeRun()
    sweep = Sweep(
        settle=False,  # a scripted runner: its answers are the cells' own
        targets=[Target("beast")],
        protocols=["http"],
        concurrencies=[2],
        connection_setup=True,
        connection_setup_concurrency=2,
        requests=20,
        repeats=1,
        contended_reruns=0,
        ack_with_request=True,
        rst_close=True,
    )
    sweep.run(tmp_path, progress=False, notes=False, runner=fake, environment=False)
    by_mode = {
        kwargs["keepalive"]: (kwargs.get("ack_with_request"), kwargs.get("rst_close"))
        for _, kwargs in fake.calls
    }
    assert by_mode == {True: (None, None), False: (True, True)}
    assert "the handshake's last ACK rides on the request" in report.render(tmp_path)


def test_a_sweep_without_them_states_the_default_exchange(tmp_path: Path):
    fake = FakeRun()
    sweep = Sweep(
        settle=False,  # a scripted runner: its answers are the cells' own
        targets=[Target("beast")],
        protocols=["http"],
        concurrencies=[2],
        connection_setup=True,
        connection_setup_concurrency=2,
        requests=20,
        repeats=1,
        contended_reruns=0,
    )
    sweep.run(tmp_path, progress=False, notes=False, runner=fake, environment=False)
    assert all("rst_close" not in kwargs for _, kwargs in fake.calls)
    assert "connections closed with FIN" in report.render(tmp_path)
