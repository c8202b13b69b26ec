"""loadbench.core._core.Server: the same Beast server inside the Python process."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time

import pytest

from loadbench.core import _core


def _get(port: int, path: str = "/") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", path)
    resp = conn.getresponse()
    result = resp.status, resp.read()
    conn.close()
    return result


def test_start_serve_count_stop():
    server = _core.Server(workers=2)
    assert not server.running and server.http_port is None
    server.start()
    try:
        assert server.running and server.http_port > 0 and server.https_port is None
        for _ in range(7):
            assert _get(server.http_port) == (200, b"Hello, World!\n")
        assert _get(server.http_port, "/json")[0] == 200
        assert _get(server.http_port, "/missing")[0] == 404
        counters = server.counters()
    finally:
        assert server.stop(timeout=5) is True
    assert not server.running
    assert counters["requests"]["plaintext"] == 7
    assert counters["requests"]["json"] == 1
    assert counters["requests"]["not_found"] == 1
    assert counters["requests_total"] == 9
    assert counters["connections_accepted"] == 9
    final = server.counters()
    assert final["connections_open"] == 0 and final["requests_total"] == 9


def test_gil_is_released_while_serving():
    """A Python client in this very process gets answers: the server threads never need the GIL."""
    with _core.Server() as server:
        results = []
        threads = [
            threading.Thread(target=lambda: results.append(_get(server.http_port)[0]))
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=5)
        assert results == [200] * 4


def test_stop_waits_for_in_flight_delay_without_holding_the_gil():
    server = _core.Server()
    server.start()
    port = server.http_port
    result = {}
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(b"GET /delay?ms=400 HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.1)
    reader = threading.Thread(target=lambda: result.setdefault("data", sock.recv(4096)))
    reader.start()  # runs while stop() blocks: stop() must have released the GIL
    assert server.stop(timeout=5) is True
    reader.join(timeout=5)
    sock.close()
    assert result["data"].startswith(b"HTTP/1.1 200 OK")
    assert server.counters()["requests"]["delay"] == 1


def test_tls_in_process():
    with _core.Server(tls=True, http=False) as server:
        assert server.http_port is None and server.https_port > 0
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection("127.0.0.1", server.https_port, timeout=5, context=ctx)
        conn.request("GET", "/json")
        assert conn.getresponse().read() == b'{"message":"Hello, World!"}'
        conn.close()


def test_port_in_use_raises_oserror():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = _core.Server(port=port)
        with pytest.raises(OSError, match="in use"):
            server.start()
        assert not server.running


def test_bad_configuration_raises_value_error():
    with pytest.raises(ValueError, match="--workers"):
        _core.Server(workers=0)
    with pytest.raises(ValueError, match="accept"):
        _core.Server(accept="nope")
    with pytest.raises(ValueError, match="nothing to serve"):
        _core.Server(http=False)
