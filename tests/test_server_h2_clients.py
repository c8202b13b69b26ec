"""HTTP/2 in the native server, checked by clients no one here wrote: h2load, curl, nghttp.

h2c is prior knowledge on the plain port (a connection starting with the HTTP/2 preface);
h2 is ALPN on the TLS port. Each tool missing is a skip that names the package to install
(.ci/install.sh installs them: nghttp2-client, curl).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from loadbench import ServerProcess


def need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not found: apt-get install {package}")
    return path


def run(
    argv: list[str], timeout: float = 60.0, stdin: bytes | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout
    )


@pytest.fixture
def h2_server(server_factory) -> ServerProcess:
    return server_factory(tls=True)


def base_url(server: ServerProcess, tls: bool) -> str:
    return server.url("", https=tls)


# --- h2load: exact counts -------------------------------------------------------------
def h2load_counts(output: str) -> dict[str, int]:
    m = re.search(
        r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
        r"(\d+) errored, (\d+) timeout",
        output,
    )
    assert m, output
    keys = ("total", "started", "done", "succeeded", "failed", "errored", "timeout")
    counts = dict(zip(keys, map(int, m.groups())))
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", output)
    assert codes, output
    counts["2xx"] = int(codes.group(1))
    return counts


@pytest.mark.parametrize("tls", [False, True], ids=["h2c", "h2-alpn"])
def test_h2load_10000_requests_exact(server_factory, tls: bool) -> None:
    h2load = need("h2load", "nghttp2-client")
    server = server_factory(tls=tls, http=not tls)
    proc = run(
        [h2load, "-n", "10000", "-c", "4", "-m", "10", base_url(server, tls) + "/plaintext"],
        timeout=120,
    )
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == 0, out + proc.stderr.decode(errors="replace")
    counts = h2load_counts(out)
    assert counts["succeeded"] == 10000 and counts["2xx"] == 10000, out
    assert counts["failed"] == counts["errored"] == counts["timeout"] == 0, out
    if tls:
        assert "Application protocol: h2" in out, out
    stopped = server.stop()
    assert stopped["h2"]["requests"] == 10000, stopped
    assert stopped["h2"]["streams"] == 10000, stopped
    assert stopped["h2"]["connections"] == 4, stopped
    assert stopped["requests"]["plaintext"] == 10000 and stopped["h1"]["requests"] == 0, stopped


def test_h2load_mixed_routes_and_http1_on_the_same_port(h2_server: ServerProcess) -> None:
    """h2c and HTTP/1.1 side by side on one port; every route's count lands where it belongs."""
    h2load = need("h2load", "nghttp2-client")
    base = base_url(h2_server, False)
    proc = run(
        [
            h2load,
            "-n",
            "600",
            "-c",
            "2",
            "-m",
            "5",
            f"{base}/json",
            f"{base}/",
            f"{base}/delay?ms=1",
        ]
    )
    assert proc.returncode == 0
    assert h2load_counts(proc.stdout.decode())["2xx"] == 600
    h1 = run(
        [h2load, "--h1", "-n", "300", "-c", "2", f"{base}/plaintext"]
    )  # HTTP/1.1 on the same port
    assert h2load_counts(h1.stdout.decode())["2xx"] == 300
    stopped = h2_server.stop()
    assert stopped["requests"]["json"] == 200 and stopped["requests"]["delay"] == 200
    assert stopped["requests"]["plaintext"] == 200 + 300
    assert stopped["h2"]["requests"] == 600 and stopped["h1"]["requests"] == 300


# --- curl: every route over h2c and h2 ------------------------------------------------
def curl(
    url: str, tls: bool, *extra: str, data: Path | None = None
) -> tuple[int, str, dict[str, str], bytes]:
    exe = need("curl", "curl")
    argv = [exe, "-sS", "-D", "-", "--max-time", "20"]
    argv += ["--http2", "-k"] if tls else ["--http2-prior-knowledge"]
    if data is not None:
        argv += ["--data-binary", f"@{data}"]
    proc = run(argv + list(extra) + [url])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    raw = proc.stdout
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    version, status = lines[0].split(" ")[:2]
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    return int(status), version, headers, body


@pytest.mark.parametrize("tls", [False, True], ids=["h2c", "h2-alpn"])
def test_curl_every_route(h2_server: ServerProcess, tls: bool, tmp_path: Path) -> None:
    base = base_url(h2_server, tls)
    for path in ("/", "/plaintext"):
        status, version, headers, body = curl(base + path, tls)
        assert (status, version, body) == (200, "HTTP/2", b"Hello, World!\n")
        assert headers["content-type"] == "text/plain" and headers["content-length"] == "14"
        assert headers["server"] == "loadbench" and headers["date"].endswith("GMT")
    status, _, headers, body = curl(base + "/json", tls)
    assert (status, body, headers["content-type"]) == (
        200,
        b'{"message":"Hello, World!"}',
        "application/json",
    )

    payload = tmp_path / "mib.bin"
    payload.write_bytes(bytes(range(256)) * 4096)  # 1 MiB: many DATA frames, flow control both ways
    status, _, headers, body = curl(
        base + "/echo", tls, "-H", "Content-Type: application/x-test", data=payload
    )
    assert status == 200 and body == payload.read_bytes()
    assert headers["content-type"] == "application/x-test" and headers["content-length"] == str(
        1 << 20
    )

    status, _, _, body = curl(base + "/delay?ms=30", tls)
    assert (status, body) == (200, b"Hello, World!\n")
    status, _, _, body = curl(base + "/nope", tls)
    assert (status, body) == (404, b"Not Found\n")
    status, _, headers, _ = curl(base + "/json", tls, "-X", "POST", "-d", "x")
    assert status == 405 and headers["allow"] == "GET, HEAD"
    status, _, headers, _ = curl(base + "/echo", tls)
    assert status == 405 and headers["allow"] == "POST"
    status, _, _, _ = curl(base + "/delay?ms=abc", tls)
    assert status == 400

    stopped = h2_server.stop()
    assert stopped["h2"]["requests"] == 9 and stopped["h1"]["requests"] == 0, stopped
    assert stopped["requests"]["echo"] == 1 and stopped["requests"]["delay"] == 1


@pytest.mark.parametrize("tls", [False, True], ids=["h2c", "h2-alpn"])
def test_curl_echo_over_max_body_is_413(server_factory, tls: bool, tmp_path: Path) -> None:
    server = server_factory(tls=tls, max_body=64 * 1024)
    payload = tmp_path / "big.bin"
    payload.write_bytes(b"x" * (200 * 1024))
    status, _, _, body = curl(base_url(server, tls) + "/echo", tls, data=payload)
    assert (status, body) == (413, b"Payload Too Large\n")
    # The connection-level flow control was kept moving: the server still answers.
    status, _, _, _ = curl(base_url(server, tls) + "/plaintext", tls)
    assert status == 200
    assert server.stop()["requests"]["body_too_large"] == 1


def test_http1_still_served_over_tls_alpn(h2_server: ServerProcess) -> None:
    exe = need("curl", "curl")
    proc = run(
        [
            exe,
            "-sS",
            "-k",
            "--http1.1",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
            h2_server.url("/json", https=True),
        ]
    )
    assert proc.stdout.decode() == "1.1 200"


# --- nghttp: the SETTINGS the server announces ---------------------------------------
def test_nghttp_shows_settings(server_factory) -> None:
    nghttp = need("nghttp", "nghttp2-client")
    server = server_factory(h2_max_streams=37)
    proc = run([nghttp, "-nv", server.url("/plaintext")], timeout=30)
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == 0, out
    settings = out[out.index("recv SETTINGS frame") :]
    assert re.search(r"\[SETTINGS_MAX_CONCURRENT_STREAMS\(0x03\):37\]", settings), out
    assert re.search(r"\[SETTINGS_MAX_HEADER_LIST_SIZE\(0x06\):8192\]", settings), out
    assert ":status: 200" in out


@pytest.mark.parametrize("tls", [False, True], ids=["h2c", "h2-alpn"])
def test_h2load_concurrent_large_uploads_all_echoed(
    server_factory, tls: bool, tmp_path: Path
) -> None:
    """20 streams per connection each upload 300 KB at once: h2load spreads the connection
    window over all of them, so no stream's body is complete until the server has taken
    about 6 MB per connection - flow control must keep moving (no deadlock, no error)."""
    h2load = need("h2load", "nghttp2-client")
    server = server_factory(tls=tls, http=not tls)
    body = tmp_path / "body.bin"
    body.write_bytes(bytes(range(256)) * 1200)  # 300 KiB
    proc = run(
        [
            h2load,
            "-n",
            "400",
            "-c",
            "4",
            "-m",
            "20",
            "-d",
            str(body),
            base_url(server, tls) + "/echo",
        ],
        timeout=120,
    )
    out = proc.stdout.decode(errors="replace")
    counts = h2load_counts(out)
    assert counts["succeeded"] == 400 and counts["2xx"] == 400 and counts["errored"] == 0, out
    assert server.stop()["requests"]["echo"] == 400
