"""HTTP/3 in the generator (issue 33, generator side): `protocol="h3"` / `--h3` against caddy, a
server no one here wrote (Debian's caddy 2.6.2 serves HTTP/3 on the UDP port of its HTTPS
site). Exact counts are checked against caddy's own access log, whose `request.proto` must say
HTTP/3.0 for every line. Skips cleanly when caddy or the build's HTTP/3 (ngtcp2 + nghttp3) is
absent.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, Optional

import pytest
from cli_runner import loadbench_cli

import loadbench
from loadbench import ConfigError
from loadbench.core import _core

HAVE_H3 = _core.http3_available()
needs_h3 = pytest.mark.skipif(
    not HAVE_H3,
    reason="this build has no HTTP/3: apt-get install libngtcp2-dev libngtcp2-crypto-gnutls-dev "
    "libnghttp3-dev libgnutls28-dev, then rebuild",
)


def free_port(host: str = "127.0.0.1") -> int:
    """A port free for TCP and UDP both (caddy serves HTTPS on TCP and HTTP/3 on UDP)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(50):
        with socket.socket(family) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as u:
                u.bind((host, port))
            return port
        except OSError:
            continue
    raise RuntimeError("no port free for both TCP and UDP")


def udp_bound(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM) as u:
        try:
            u.bind((host, port))
        except OSError:
            return True
    return False


class Caddy:
    def __init__(
        self,
        folder: Path,
        backend_port: Optional[int] = None,
        files: Optional[Path] = None,
        host: str = "127.0.0.1",
    ) -> None:
        caddy = shutil.which("caddy")
        if caddy is None:
            pytest.skip("caddy not found: apt-get install caddy")
        self.folder = folder
        self.host = host
        self.authority = f"[{host}]" if ":" in host else host  # as in a URL
        self.port = free_port(host)
        self.access_log = folder / "access.log"
        proxy = (
            f"\thandle /delay* {{\n\t\treverse_proxy 127.0.0.1:{backend_port}\n\t}}\n"
            if backend_port
            else ""
        )
        if files is not None:
            proxy += f"\thandle /files/* {{\n\t\troot * {files.parent}\n\t\tfile_server\n\t}}\n"
        # Local CA (tls internal), nothing outside 127.0.0.1: no admin endpoint, no :80
        # redirect listener, no trust-store installation, all state under `folder`.
        (folder / "Caddyfile").write_text(
            "{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n"
            f"\thttp_port {free_port()}\n\thttps_port {self.port}\n"
            f"\tstorage file_system {folder / 'data'}\n}}\n"
            f"https://{self.authority}:{self.port} {{\n\tbind {host}\n\ttls internal\n"
            f"\tlog {{\n\t\toutput file {self.access_log}\n\t\tformat json\n\t}}\n"
            f"{proxy}"
            '\thandle {\n\t\trespond "Hello, World!" 200\n\t}\n}\n'
        )
        env = dict(os.environ, HOME=str(folder), XDG_DATA_HOME=str(folder / "xdg"))
        env["XDG_CONFIG_HOME"] = str(folder / "xdg")
        self.stderr = open(folder / "caddy.err", "wb")
        self.proc = subprocess.Popen(
            [caddy, "run", "--config", str(folder / "Caddyfile"), "--adapter", "caddyfile"],
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            env=env,
            cwd=folder,
        )
        deadline = time.monotonic() + 20
        # ready once a TLS handshake succeeds: caddy issues its internal certificate in the
        # background after it listens, and answers handshakes before that with an internal-error alert
        while not (udp_bound(self.port, host) and self._tls_up()):
            if self.proc.poll() is not None:
                raise RuntimeError(f"caddy exited: {(folder / 'caddy.err').read_text()[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("caddy did not start listening on TCP and UDP within 20 s")
            time.sleep(0.05)

    def _tls_up(self) -> bool:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as raw:
                with context.wrap_socket(raw, server_hostname=self.host):
                    return True
        except (OSError, ssl.SSLError):
            return False

    def url(self, path: str = "/") -> str:
        return f"https://{self.authority}:{self.port}{path}"

    def log_lines(self) -> list[dict]:
        if not self.access_log.exists():
            return []
        return [json.loads(line) for line in self.access_log.read_text().splitlines() if line]

    def settled_log(self, expected: int, timeout: float = 5.0) -> list[dict]:
        """The access log once it holds `expected` lines (and a moment more, so extra lines show)."""
        deadline = time.monotonic() + timeout
        while len(self.log_lines()) < expected and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        return self.log_lines()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


@pytest.fixture
def caddy(tmp_path: Path) -> Iterator[Caddy]:
    server = Caddy(tmp_path)
    try:
        yield server
    finally:
        server.stop()


class _Delay(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        time.sleep(0.2)
        body = b"slow\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def caddy_with_delay(tmp_path: Path) -> Iterator[Caddy]:
    """caddy answering /delay from a backend that takes 200 ms per request (caddy has no delay)."""
    backend = ThreadingHTTPServer(("127.0.0.1", 0), _Delay)
    backend.daemon_threads = True
    thread = threading.Thread(target=backend.serve_forever, daemon=True)
    thread.start()
    server = Caddy(tmp_path, backend_port=backend.server_address[1])
    try:
        yield server
    finally:
        server.stop()
        backend.shutdown()
        backend.server_close()


@needs_h3
def test_h3_exact_count_against_caddy_access_log(caddy: Caddy) -> None:
    n = 1000
    r = loadbench.run(caddy.url(), protocol="h3", requests=n, connections=4, streams=5, timeout=5)
    assert r.responses == n and r.status_codes == {200: n}, r.first_error
    assert r.error_count == 0 and r.unfinished == 0
    assert r.connections_opened == 4 and r.tls_handshakes == 4
    assert r.latency.count == n
    assert r.config["protocol"] == "h3" and r.config["streams"] == 5
    assert r.to_dict()["config"]["protocol"] == "h3"
    assert r.bytes_read > 0 and r.bytes_written > 0
    assert any("HTTP/3 (QUIC, ALPN h3)" in line for line in r.summary_lines())
    lines = caddy.settled_log(n)
    assert len(lines) == n
    assert {line["request"]["proto"] for line in lines} == {"HTTP/3.0"}
    assert {line["status"] for line in lines} == {200}
    assert {line["request"]["headers"]["User-Agent"][0] for line in lines} == {"loadbench"}


@needs_h3
def test_h3_duration_mode_every_response_is_in_the_log(caddy: Caddy) -> None:
    r = loadbench.run(caddy.url(), protocol="h3", duration=1.0, connections=2, streams=4, timeout=5)
    assert r.responses > 100 and r.error_count == 0 and r.unfinished == 0, r.first_error
    assert r.status_codes == {200: r.responses}
    lines = caddy.settled_log(r.responses)
    # Closed loop, no warm-up: every request started is answered (the run drains), and nothing
    # else reached the server.
    assert len(lines) == r.responses
    assert {line["request"]["proto"] for line in lines} == {"HTTP/3.0"}


@needs_h3
def test_h3_one_mib_responses_cross_the_flow_control_windows(tmp_path: Path) -> None:
    # 24 x 1 MiB on 2 connections: more than each connection's initial 16 MiB window, so the
    # body is only complete if the consumed bytes go back to the server (MAX_DATA/MAX_STREAM_DATA).
    files = tmp_path / "files"
    files.mkdir()
    (files / "big.bin").write_bytes(os.urandom(1 << 20))
    home = tmp_path / "caddy"
    home.mkdir()
    server = Caddy(home, files=files)
    try:
        r = loadbench.run(
            server.url("/files/big.bin"),
            protocol="h3",
            requests=24,
            connections=2,
            streams=4,
            timeout=10,
        )
        assert r.responses == 24 and r.status_codes == {200: 24}, r.first_error
        assert r.bytes_read > 24 << 20
        lines = server.settled_log(24)
        assert len(lines) == 24 and {line["size"] for line in lines} == {1 << 20}
    finally:
        server.stop()


@needs_h3
def test_h3_streams_multiplex_on_one_connection(caddy_with_delay: Caddy) -> None:
    url = caddy_with_delay.url("/delay")
    t0 = time.monotonic()
    one = loadbench.run(url, protocol="h3", connections=1, streams=1, requests=10, timeout=5)
    serial = time.monotonic() - t0
    t0 = time.monotonic()
    ten = loadbench.run(url, protocol="h3", connections=1, streams=10, requests=20, timeout=5)
    multiplexed = time.monotonic() - t0
    assert one.responses == 10 and ten.responses == 20, (one.first_error, ten.first_error)
    assert ten.connections_opened == 1 and ten.error_count == 0
    # 10 x 200 ms one after another, against 20 requests 10 at a time on one connection.
    assert serial >= 2.0
    assert multiplexed < serial * 0.6, (serial, multiplexed)
    assert ten.in_flight > 5, ten.in_flight  # Little's law: ~10 streams busy at once
    lines = caddy_with_delay.settled_log(30)
    assert len(lines) == 30
    # One QUIC connection: every request of the second run came from one client port.
    ports = {line["request"]["remote_port"] for line in lines[10:]}
    assert len(ports) == 1, ports


@needs_h3
def test_h3_timeout_cancels_the_stream_and_the_connection_goes_on(caddy_with_delay: Caddy) -> None:
    # /delay answers after 200 ms; at a 100 ms timeout every request is cancelled on its own
    # stream (RESET_STREAM + STOP_SENDING), counted as a timeout, and the one QUIC connection
    # carries the next request.
    url = caddy_with_delay.url("/delay")
    r = loadbench.run(url, protocol="h3", connections=1, streams=2, requests=6, timeout=0.1)
    assert r.responses == 0 and r.errors["timeout"] == 6 and r.error_count == 6, r.errors
    assert "HTTP/3 stream cancelled" in r.first_error, r.first_error
    assert r.connections_opened == 1 and r.tls_handshakes == 1


@needs_h3
def test_h3_nothing_listening_is_one_clear_connect_error() -> None:
    port = free_port()  # nothing on it: the kernel answers ICMP port unreachable
    t0 = time.monotonic()
    r = loadbench.run(f"https://127.0.0.1:{port}/", protocol="h3", requests=3, timeout=2)
    assert time.monotonic() - t0 < 5
    assert r.responses == 0 and r.errors["connect"] == 3, r.errors
    assert "nothing listens on that UDP port" in r.first_error


@needs_h3
def test_h3_silent_udp_port_is_a_handshake_timeout_not_a_hang() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))  # takes the datagrams, never answers
        port = silent.getsockname()[1]
        t0 = time.monotonic()
        r = loadbench.run(f"https://127.0.0.1:{port}/", protocol="h3", requests=1, timeout=1)
        elapsed = time.monotonic() - t0
    assert elapsed < 4, elapsed
    assert r.responses == 0 and r.error_count == 1, r.errors
    # Two clocks end it at the same 1000 ms: ngtcp2's handshake timeout (from the connection's
    # open: a connect error naming the QUIC handshake) or, when the worker's 10 ms timeout check
    # comes first, the request's own timeout. Either is one clear error; a hang is neither.
    if r.errors["connect"] == 1:
        assert "QUIC handshake: no answer from the server within 1000 ms" in r.first_error
    else:
        assert r.errors["timeout"] == 1, r.errors
        assert "timeout: no complete response within 1000 ms" in r.first_error, r.first_error


QUIC_SERVER = """
import asyncio, sys
from aioquic.asyncio import serve
from aioquic.quic.configuration import QuicConfiguration

async def main(port, alpn, cert, key):
    configuration = QuicConfiguration(is_client=False, alpn_protocols=[alpn])
    configuration.load_cert_chain(cert, key)
    await serve("127.0.0.1", port, configuration=configuration)
    print("ready", flush=True)
    await asyncio.Future()

asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]))
"""


@needs_h3
def test_h3_server_without_alpn_h3_is_one_clear_handshake_error(tmp_path: Path) -> None:
    # A QUIC server no one here wrote (aioquic) that speaks only "hq-interop": the TLS handshake
    # fails with no_application_protocol, and the error says why - never a fallback.
    pytest.importorskip("aioquic", reason="aioquic not installed: pip install aioquic")
    from loadbench.core.certificates import self_signed

    cert, key = self_signed(tmp_path / "cert.pem", tmp_path / "key.pem", days=2)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", QUIC_SERVER, str(port), "hq-interop", str(cert), str(key)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        t0 = time.monotonic()
        r = loadbench.run(f"https://127.0.0.1:{port}/", protocol="h3", requests=2, timeout=3)
        assert time.monotonic() - t0 < 2
    finally:
        server.kill()
        server.wait()
    assert r.responses == 0 and r.errors["connect"] == 2, r.errors
    assert "QUIC handshake: the server closed the connection (TLS alert" in r.first_error
    assert "offers ALPN h3 only" in r.first_error, r.first_error


@needs_h3
def test_h3_needs_https() -> None:
    with pytest.raises(ConfigError, match="HTTP/3 needs an https:// URL"):
        loadbench.run("http://127.0.0.1:1/", protocol="h3", requests=1)


@needs_h3
def test_h3_refuses_tcp_only_options() -> None:
    url = "https://127.0.0.1:1/"
    with pytest.raises(ConfigError, match="HTTP/2 and HTTP/3 carry concurrent requests as streams"):
        loadbench.run(url, protocol="h3", requests=1, pipeline=2)
    with pytest.raises(ConfigError, match="TCP options: HTTP/3 runs over QUIC"):
        loadbench.run(url, protocol="h3", requests=1, ack_with_request=True)


@needs_h3
def test_cli_h3_flag_writes_protocol_h3(caddy: Caddy, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = loadbench_cli("run", caddy.url(), "--h3", "-n", "50", "-c", "1", "--json", str(out))
    assert done.returncode == 0, done.stderr
    d = json.loads(out.read_text())
    assert d["config"]["protocol"] == "h3" and d["responses"] == 50
    assert "HTTP/3" in done.stdout
    assert len(caddy.settled_log(50)) == 50


@pytest.mark.skipif(HAVE_H3, reason="this build has HTTP/3 (the message is for builds without it)")
def test_h3_without_the_build_is_one_clear_config_error() -> None:
    with pytest.raises(ConfigError, match="HTTP/3 is not in this build"):
        loadbench.run("https://127.0.0.1:1/", protocol="h3", requests=1)
