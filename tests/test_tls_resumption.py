"""TLS session resumption (`--tls-resume`), checked against the server's own record: nginx
logs `$ssl_session_reused` per request. TLS 1.3 sends its ticket after the handshake, so the
session to resume is kept from OpenSSL's new-session callback (the session right after the
handshake is not resumable - the defect this guards against: every "resumed" connection was a
full handshake). One connection, a new connection per request: the first handshake is full,
every later one resumed, exactly."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

import loadbench
from loadbench.core.certificates import self_signed

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
OPENSSL = shutil.which("openssl")
pytestmark = pytest.mark.skipif(
    not NGINX or not OPENSSL, reason="needs nginx (nginx-light) and the openssl CLI"
)

REQUESTS = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx in the foreground on 127.0.0.1:port with TLS, logging whether each request's
    session was reused; stopped by its pid (bounded)."""

    def __init__(self, root: Path, protocol: str) -> None:
        self.root = root
        self.port = free_port()
        cert, key = self_signed(root / "cert.pem", root / "key.pem")
        for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (root / sub).mkdir(exist_ok=True)
        conf = root / "nginx.conf"
        conf.write_text(f"""
daemon off;
master_process off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 128; }}
http {{
    log_format reuse '$ssl_session_reused $ssl_protocol';
    access_log {root}/access.log reuse;
    client_body_temp_path {root}/client_body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    server {{
        listen 127.0.0.1:{self.port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols {protocol};
        ssl_session_cache shared:tls:1m;
        location / {{ return 200 "ok\\n"; }}
    }}
}}
""")
        self.proc = subprocess.Popen(
            [NGINX, "-p", str(root), "-c", str(conf), "-e", str(root / "error.log")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    err = (root / "error.log").read_text() if (root / "error.log").exists() else ""
                    pytest.skip(f"nginx did not start: {err[-500:]}")
                time.sleep(0.05)

    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def log(self) -> list[tuple[str, str]]:
        lines = (self.root / "access.log").read_text().split("\n")
        return [tuple(line.split()) for line in lines if line.strip()]


@pytest.mark.parametrize("protocol", ["TLSv1.3", "TLSv1.2"])
@pytest.mark.parametrize("resume", [True, False])
def test_tls_resume_is_what_the_server_sees(tmp_path: Path, protocol: str, resume: bool):
    nginx = Nginx(tmp_path, protocol)
    try:
        r = loadbench.run(
            nginx.url(),
            connections=1,
            requests=REQUESTS,
            keepalive=False,
            tls_session_resumption=resume,
            timeout=5.0,
        )
    finally:
        nginx.stop()
    log = nginx.log()
    assert len(log) == REQUESTS and {p for _, p in log} == {protocol}
    server_resumed = sum(1 for reused, _ in log if reused == "r")
    assert r.responses == REQUESTS and r.error_count == 0
    assert r.tls_handshakes == REQUESTS
    if resume:
        assert server_resumed == REQUESTS - 1  # all but the first
        assert log[0][0] == "."
    else:
        assert server_resumed == 0
    assert r.tls_resumed == server_resumed
    assert r.to_dict()["tls_resumed"] == server_resumed
