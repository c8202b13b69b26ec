"""nginx with its own access log, for tests that check loadbench's exact counts against software
no one here wrote: one line per answered request, written by nginx itself."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from loadbench.core.certificates import self_signed

NGINX: Optional[str] = shutil.which("nginx") or (
    "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
)

_CONF = """
worker_processes 1;
pid {run}/nginx.pid;
error_log {run}/error.log warn;
daemon off;
events {{ worker_connections 1024; }}
http {{
    access_log {run}/access.log;
    client_body_temp_path {run}/body;
    proxy_temp_path {run}/proxy;
    fastcgi_temp_path {run}/fastcgi;
    uwsgi_temp_path {run}/uwsgi;
    scgi_temp_path {run}/scgi;
    keepalive_requests {keepalive_requests};
    server {{
        listen 127.0.0.1:{port}{listen};
        {tls}
        location / {{ default_type text/plain; return 200 "{body}"; }}
    }}
}}
"""


class Nginx:
    """A running nginx: its port, and the requests its access log holds."""

    def __init__(self, port: int, run: Path) -> None:
        self.port, self.run = port, run
        self.logged: list[str] = []  # the whole log, read once nginx has stopped

    def access_log_lines(self) -> list[str]:
        """The requests logged so far (nginx writes a line just after its response)."""
        time.sleep(0.2)
        log = self.run / "access.log"
        return log.read_text().splitlines() if log.exists() else []


@contextmanager
def nginx_with_access_log(
    keepalive_requests: int = 100000, h2_over_tls: bool = False, body: str = "Hello, World!\\n"
) -> Iterator[Nginx]:
    """An nginx answering 200 to every GET, HTTP/1.1 in clear or, with h2_over_tls, HTTP/2 over
    TLS (ALPN h2) with a self-signed certificate. On exit it stops gracefully (SIGQUIT), so its
    access log is complete, and the log's lines are left in `.logged`. keepalive_requests: after
    that many requests nginx closes the connection (Connection: close, or GOAWAY over HTTP/2)."""
    assert NGINX is not None, "callers skip without nginx"
    run = Path(tempfile.mkdtemp(prefix="lb-nginx-"))
    os.chmod(run, 0o755)  # nginx's workers run as another user
    tls = ""
    if h2_over_tls:
        self_signed(run / "cert.pem", run / "key.pem", days=2)
        os.chmod(run / "key.pem", 0o644)
        tls = f"ssl_certificate {run}/cert.pem; ssl_certificate_key {run}/key.pem;"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = run / "nginx.conf"
    conf.write_text(
        _CONF.format(
            run=run,
            port=port,
            listen=" ssl http2" if h2_over_tls else "",
            tls=tls,
            keepalive_requests=keepalive_requests,
            body=body,
        )
    )
    proc = subprocess.Popen(
        [NGINX, "-p", str(run), "-c", str(conf), "-e", str(run / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    nginx = Nginx(port, run)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    message = proc.stderr.read().decode()
                    raise RuntimeError(f"nginx did not start: {message}") from None
                time.sleep(0.05)
        yield nginx
    finally:
        proc.send_signal(signal.SIGQUIT)  # graceful: the log is complete when it exits
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log = run / "access.log"
        if log.exists():
            nginx.logged = log.read_text().splitlines()
        shutil.rmtree(run, ignore_errors=True)
