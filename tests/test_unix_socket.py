"""Unix-domain-socket targets (issue 28, item 4): the generator's `unix_socket` / `unix:PATH`,
`loadbench-server --unix PATH`, and a sweep's `transport = "unix"`, over real AF_UNIX sockets.

Counts are exact: the generator's outcomes, the server's own counters and an outside client
(curl --unix-socket) agree; nothing here asserts a speed.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Iterator, Optional

import pytest

import loadbench
from loadbench import ConfigError, Sweep, Target
from loadbench.core._core import Server as InProcessServer
from loadbench.core.certificates import self_signed
from loadbench.core.errors import ServerError
from loadbench.report import document as report
from loadbench.sweep import results_folder as results
from loadbench.sweep.file import sweep_from_dict
from loadbench.sweep.registry import default_peer_targets

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / "bench" / "peers"


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    # Short and under /tmp: an AF_UNIX path holds at most 107 bytes, pytest's tmp_path may not fit.
    path = Path(tempfile.mkdtemp(prefix="lb-unix-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def unix_server(server_factory, sock_dir):
    return server_factory(unix=str(sock_dir / "beast.sock"))


# -- the generator against loadbench-server --unix ---------------------------------------------
@pytest.mark.parametrize(
    "case, kwargs, workers",
    [
        ("keep-alive", {}, 1),
        ("no keep-alive", {"keepalive": False}, 1),
        ("h2c streams", {"protocol": "h2", "streams": 5}, 1),
        ("keep-alive, two workers", {}, 2),
    ],
)
def test_exact_counts_over_the_unix_socket(server_factory, sock_dir, case, kwargs, workers):
    path = str(sock_dir / "beast.sock")
    server = server_factory(unix=path, workers=workers)
    assert server.unix_socket == path and server.http_port is None
    r = loadbench.run(
        server.url("/plaintext"),
        unix_socket=path,
        requests=500,
        connections=4,
        **kwargs,
        prime=False,  # the server counts the run's own connections only
    )
    assert r.responses == 500 and r.status_codes == {200: 500}, case
    assert sum(r.errors.values()) == 0 and r.unfinished == 0, r.first_error
    assert r.config["unix_socket"] == path
    stopped = server.stop()
    assert stopped["requests"]["plaintext"] == 500 == stopped["requests_total"]
    if kwargs.get("keepalive") is False:
        assert r.connections_opened == 500 == stopped["connections_accepted"]
        assert stopped["h1"] == {"connections": 500, "requests": 500}
    elif kwargs.get("protocol") == "h2":
        assert r.connections_opened == 4 == stopped["connections_accepted"]
        assert stopped["h2"]["connections"] == 4 and stopped["h2"]["requests"] == 500
    else:
        assert r.connections_opened == 4 == stopped["connections_accepted"]
        assert stopped["h1"] == {"connections": 4, "requests": 500}
    assert not Path(path).exists()  # a clean stop removes the socket file


def test_the_unix_url_form_is_http_localhost_over_the_socket(unix_server):
    path = unix_server.unix_socket
    r = loadbench.run(f"unix:{path}", requests=50, connections=2)
    assert r.responses == 50 and r.status_codes == {200: 50}, r.first_error
    assert r.url == f"unix:{path}"
    assert unix_server.stop()["requests"]["plaintext"] == 50  # GET / is the plaintext route


def test_the_cli_takes_unix_socket_and_the_unix_url(unix_server, tmp_path):
    path = unix_server.unix_socket
    for argv in (
        ["--unix-socket", path, "http://localhost/json"],
        [f"unix:{path}"],
    ):
        out = tmp_path / "r.json"
        proc = subprocess.run(
            [sys.executable, "-m", "loadbench", "run", "-n", "40", "-c", "2", "--json", str(out)]
            + argv,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[0].startswith(
            (f"http://localhost/json via unix:{path}: ", f"unix:{path}: ")
        )
        saved = json.loads(out.read_text())
        assert saved["responses"] == 40 and saved["config"]["unix_socket"] == path
    stopped = unix_server.stop()
    assert stopped["requests"]["json"] == 40 and stopped["requests"]["plaintext"] == 40


def test_curl_gets_a_200_over_the_servers_unix_socket(unix_server):
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    proc = subprocess.run(
        [
            curl,
            "-sS",
            "--unix-socket",
            unix_server.unix_socket,
            "-w",
            "\n%{http_code}",
            "http://localhost/json",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    body, code = proc.stdout.rsplit("\n", 1)
    assert code == "200" and json.loads(body) == {"message": "Hello, World!"}
    assert unix_server.stop()["requests"]["json"] == 1


def test_the_in_process_server_listens_on_a_unix_socket(sock_dir):
    path = str(sock_dir / "in.sock")
    with InProcessServer(unix=path, workers=2) as server:
        assert server.http_port is None
        r = loadbench.run("http://localhost/", unix_socket=path, requests=100, connections=4)
        assert r.responses == 100
        assert server.counters()["requests_total"] == 100
    assert not Path(path).exists()


# -- nothing there ----------------------------------------------------------------------------
def test_a_missing_socket_is_exactly_n_connect_errors(sock_dir):
    r = loadbench.run(
        "http://localhost/", unix_socket=str(sock_dir / "none.sock"), requests=20, connections=2
    )
    assert r.responses == 0 and r.errors["connect"] == 20
    assert sum(r.errors.values()) == 20
    assert "no such file" in r.first_error.lower()


def test_a_socket_nobody_listens_on_is_refused_like_a_tcp_port(sock_dir):
    path = str(sock_dir / "stale.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as bound:
        bound.bind(path)  # bound, never listening: connects are refused
        r = loadbench.run(f"unix:{path}", requests=15, connections=3)
    assert r.responses == 0 and r.errors["connect"] == 15
    assert "refused" in r.first_error.lower()


def test_the_cli_exits_non_zero_with_one_line_for_a_missing_socket(sock_dir):
    url = f"unix:{sock_dir / 'none.sock'}"
    proc = subprocess.run(
        [sys.executable, "-m", "loadbench", "run", "-n", "10", "-c", "2", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"loadbench: error: no responses from {url}")
    assert "connect" in lines[0] and "no such file" in lines[0].lower()


# -- refused configurations -------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"ack_with_request": True}, "ack_with_request is a TCP option"),
        ({"rst_close": True}, "rst_close is a TCP option"),
    ],
)
def test_tcp_only_options_are_refused_for_a_unix_socket(sock_dir, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        loadbench.run(
            "http://localhost/", unix_socket=str(sock_dir / "x.sock"), requests=1, **kwargs
        )


def test_bad_unix_socket_settings_are_config_errors(sock_dir):
    with pytest.raises(ConfigError, match="once"):
        loadbench.run(f"unix:{sock_dir}/a.sock", unix_socket=str(sock_dir / "b.sock"), requests=1)
    with pytest.raises(ConfigError, match="no socket path"):
        loadbench.run("unix:", requests=1)
    with pytest.raises(ConfigError, match="longer than the 107 bytes"):
        loadbench.run("http://localhost/", unix_socket="/tmp/" + "x" * 200, requests=1)
    with pytest.raises(ConfigError, match="unix_socket must be a socket path"):
        loadbench.run("http://localhost/", unix_socket=3, requests=1)


# -- the bytes the generator sends ------------------------------------------------------------
class UnixRecorder:
    """An AF_UNIX HTTP/1.1 server that keeps every request head it reads and answers 200."""

    def __init__(self, path: str, tls: Optional[ssl.SSLContext] = None) -> None:
        self.path = path
        self.tls = tls
        self.heads: list[bytes] = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(16)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        buf = b""
        if self.tls is not None:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except (OSError, ssl.SSLError):
                conn.close()
                return
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                self.heads.append(head)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    def close(self) -> None:
        self.listener.close()


def test_the_generator_sends_the_urls_host_and_path_over_the_socket(sock_dir):
    recorder = UnixRecorder(str(sock_dir / "rec.sock"))
    try:
        r = loadbench.run(f"unix:{recorder.path}", requests=3, connections=1)
        assert r.responses == 3
        r = loadbench.run(
            "http://example.test:8080/x?y=1",
            unix_socket=recorder.path,
            requests=2,
            connections=1,
            headers={"X-Test": "1"},
        )
        assert r.responses == 2
    finally:
        recorder.close()
    lines = [head.split(b"\r\n") for head in recorder.heads]
    assert [h[0] for h in lines] == [b"GET / HTTP/1.1"] * 3 + [b"GET /x?y=1 HTTP/1.1"] * 2
    hosts = [[x for x in h if x.lower().startswith(b"host:")] for h in lines]
    assert hosts == [[b"Host: localhost"]] * 3 + [[b"Host: example.test:8080"]] * 2


def test_tls_over_a_unix_socket_uses_the_urls_host_for_sni_and_the_check(sock_dir):
    cert, key = self_signed(sock_dir / "cert.pem", sock_dir / "key.pem")  # CN=localhost
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    recorder = UnixRecorder(str(sock_dir / "tls.sock"), tls)
    try:
        r = loadbench.run(
            "https://localhost/tls",
            unix_socket=recorder.path,
            requests=6,
            connections=2,
            keepalive=False,
            cacert=str(cert),
        )
    finally:
        recorder.close()
    assert r.responses == 6 and r.tls_handshakes == 6, r.first_error
    assert [h.split(b"\r\n")[0] for h in recorder.heads] == [b"GET /tls HTTP/1.1"] * 6


# -- the server's socket file -----------------------------------------------------------------
def test_the_server_replaces_a_stale_socket_but_not_a_live_one_or_a_file(server_factory, sock_dir):
    path = sock_dir / "s.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody accepts: what a killed server leaves
    server = server_factory(unix=str(path))
    assert loadbench.run(f"unix:{path}", requests=5, connections=1).responses == 5
    with pytest.raises(ServerError, match="another server is listening there"):
        server_factory(unix=str(path))
    assert loadbench.run(f"unix:{path}", requests=5, connections=1).responses == 5
    server.stop()
    assert not path.exists()
    path.write_text("not a socket")
    with pytest.raises(ServerError, match="exists and is not a socket"):
        server_factory(unix=str(path))
    assert path.read_text() == "not a socket"


def test_server_flags_for_unix_are_checked(server_factory, sock_dir):
    with pytest.raises(ConfigError, match="--unix serves plain HTTP"):
        server_factory(unix=str(sock_dir / "s.sock"), http=False, tls=True)
    with pytest.raises(ConfigError, match="--unix: the path is longer"):
        server_factory(unix="/tmp/" + "y" * 200)


def test_loadbench_serve_unix_prints_the_socket_and_serves(sock_dir):
    path = sock_dir / "serve.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "loadbench", "serve", "--unix", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.strip() == f"loadbench serve: listening on unix:{path}"
        assert loadbench.run(f"unix:{path}", requests=7, connections=1).responses == 7
    finally:
        proc.send_signal(2)  # Ctrl-C: a graceful stop
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped; 7 requests" in out
    assert not path.exists()


# -- a sweep over a unix socket ---------------------------------------------------------------
def test_a_unix_transport_sweep_measures_over_the_socket_and_says_so(tmp_path):
    out = tmp_path / "sweep"
    sweep = Sweep(
        targets=[Target("beast")],
        workloads=["plaintext"],
        concurrencies=[2],
        protocols=["http", "h2c"],
        streams={"h2c": 2},
        requests=200,
        repeats=1,
        warmup=0,
        transport="unix",
        contended_reruns=0,
        peers_dir=str(PEERS),
    )
    sweep.run(out, progress=False, environment=False)
    records = results.read_records(out / "results.jsonl")
    assert [r["protocol"] for r in records] == ["http", "h2c"]
    for r in records:
        assert r["status"] == "ok", r
        res = r["result"]
        assert res["responses"] == 200 and sum(res["errors"].values()) == 0
        path = res["config"]["unix_socket"]
        assert path.endswith("/beast.sock") and r["server"]["unix_socket"] == path
        assert res["url"] == "http://localhost/plaintext"
    settings = json.loads((out / "sweep.json").read_text())
    assert settings["transport"] == "unix"
    report.write_report(out)
    text = (out / "report.md").read_text()
    assert "| Transport | unix socket (loadbench-server --unix" in text


def test_a_unix_transport_sweep_refuses_what_a_unix_socket_cannot_carry():
    peer = next(t for t in default_peer_targets(PEERS) if t.name == "python-asyncio")
    with pytest.raises(ConfigError, match="transport 'unix' is for the embedded server"):
        Sweep(targets=[Target("beast"), peer], protocols=["http"], transport="unix")
    with pytest.raises(ConfigError, match="carries http and h2c only.*https"):
        Sweep(targets=[Target("beast")], protocols=["http", "https"], transport="unix")
    with pytest.raises(ConfigError, match="no TCP exchanges: rst_close"):
        Sweep(targets=[Target("beast")], protocols=["http"], transport="unix", rst_close=True)
    with pytest.raises(ConfigError, match="transport: 'udp' is not one of tcp, unix"):
        Sweep(targets=[Target("beast")], protocols=["http"], transport="udp")
    assert sweep_from_dict({"transport": "unix", "protocols": ["h2c"]}).transport == "unix"
    assert Sweep(targets=[Target("beast")], protocols=["http"]).settings()["transport"] == "tcp"


def test_tcp_exchange_text_says_a_unix_socket_has_none():
    from loadbench.core.tcp_exchange import tcp_exchange_text

    assert "unix socket" in tcp_exchange_text({"unix_socket": "/tmp/x.sock"})
    assert "unix socket" in tcp_exchange_text({"transport": "unix"})
    assert "wrk" in tcp_exchange_text({"transport": "tcp"})


def test_sweep_report_without_a_transport_key_reads_as_tcp():
    from loadbench.report.prose import transport_text

    assert transport_text("tcp") == "TCP over loopback"
    assert "not comparable" in transport_text("unix")
