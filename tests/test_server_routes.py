"""Every route and status of the native Beast server, over real sockets with http.client."""

from __future__ import annotations

import email.utils
import http.client
import select
import time

from server_helpers import connect, exchange, read_response


def _get(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def test_plaintext_on_root_and_plaintext(beast_server):
    for path in ("/", "/plaintext"):
        status, headers, body = _get(beast_server.http_port, "GET", path)
        assert status == 200
        assert body == b"Hello, World!\n" and len(body) == 14
        assert headers["Content-Type"] == "text/plain"
        assert headers["Content-Length"] == "14"


def test_json(beast_server):
    status, headers, body = _get(beast_server.http_port, "GET", "/json")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert body == b'{"message":"Hello, World!"}'


def test_echo_returns_body_and_content_type(beast_server):
    payload = bytes(range(256)) * 40
    status, headers, body = _get(
        beast_server.http_port, "POST", "/echo", payload, {"Content-Type": "application/x-test"}
    )
    assert status == 200
    assert body == payload
    assert headers["Content-Type"] == "application/x-test"


def test_echo_chunked_request_body(beast_server):
    conn = http.client.HTTPConnection("127.0.0.1", beast_server.http_port, timeout=5)
    conn.request(
        "POST",
        "/echo",
        body=iter([b"abc", b"defg"]),
        headers={"Content-Type": "text/plain"},
        encode_chunked=True,
    )
    resp = conn.getresponse()
    assert resp.status == 200 and resp.read() == b"abcdefg"
    conn.close()


def test_echo_without_content_type_is_octet_stream(beast_server):
    raw = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
    (resp,) = exchange(beast_server.http_port, raw)
    assert resp.status == 200 and resp.body == b"hi"
    assert resp.header("content-type") == "application/octet-stream"


def test_expect_100_continue(beast_server):
    with connect(beast_server.http_port) as sock:
        sock.sendall(
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        )
        stream = sock.makefile("rb")
        interim = read_response(stream)
        assert interim.status == 100
        sock.sendall(b"hello")
        final = read_response(stream)
        assert final.status == 200 and final.body == b"hello"


def test_delay_answers_after_the_delay(beast_server):
    start = time.monotonic()
    status, _, body = _get(beast_server.http_port, "GET", "/delay?ms=300")
    elapsed = time.monotonic() - start
    assert status == 200 and body == b"Hello, World!\n"
    assert elapsed >= 0.29


def test_delay_does_not_block_the_worker(beast_server):
    """A 3 s /delay in flight on the only worker; other requests are answered meanwhile."""
    slow = connect(beast_server.http_port)
    slow.sendall(b"GET /delay?ms=3000 HTTP/1.1\r\nHost: x\r\n\r\n")
    for _ in range(5):
        status, _, _ = _get(beast_server.http_port, "GET", "/plaintext")
        assert status == 200
    # Ordering, not timing: a blocked worker would have answered the delay first.
    assert select.select([slow], [], [], 0)[0] == []
    resp = read_response(slow.makefile("rb"))
    assert resp.status == 200
    slow.close()


def test_delay_with_bad_parameter_is_400(beast_server):
    for path in ("/delay", "/delay?ms=abc", "/delay?ms=-1", "/delay?ms=99999999999"):
        status, _, _ = _get(beast_server.http_port, "GET", path)
        assert status == 400, path


def test_unknown_path_is_404(beast_server):
    status, _, _ = _get(beast_server.http_port, "GET", "/nope")
    assert status == 404


def test_wrong_method_is_405_with_allow(beast_server):
    for method, path, allow in (
        ("POST", "/json", "GET, HEAD"),
        ("GET", "/echo", "POST"),
        ("DELETE", "/", "GET, HEAD"),
    ):
        status, headers, _ = _get(beast_server.http_port, method, path)
        assert status == 405, (method, path)
        assert headers["Allow"] == allow


def test_date_and_server_headers(beast_server):
    _, headers, _ = _get(beast_server.http_port, "GET", "/")
    assert headers["Server"] == "loadbench"
    date = email.utils.parsedate_to_datetime(headers["Date"])
    assert abs(date.timestamp() - time.time()) < 3


def test_date_is_refreshed(beast_server):
    conn = http.client.HTTPConnection("127.0.0.1", beast_server.http_port, timeout=5)
    conn.request("GET", "/")
    first = conn.getresponse()
    first.read()
    time.sleep(1.3)
    conn.request("GET", "/")
    second = conn.getresponse()
    second.read()
    assert first.getheader("Date") != second.getheader("Date")
    conn.close()


def test_many_requests_on_one_keep_alive_connection(beast_server):
    conn = http.client.HTTPConnection("127.0.0.1", beast_server.http_port, timeout=5)
    conn.connect()
    local = conn.sock.getsockname()
    for i in range(200):
        path = ("/", "/json", "/plaintext")[i % 3]
        conn.request("GET", path)
        resp = conn.getresponse()
        assert resp.status == 200
        resp.read()
        assert conn.sock is not None and conn.sock.getsockname() == local  # same connection
    conn.close()
    time.sleep(0.1)
    beast_server.stop()
    assert beast_server.stopped["connections_accepted"] == 1
    assert beast_server.stopped["requests_total"] == 200


def test_pipelined_requests_are_answered_in_order(beast_server):
    raw = (
        b"GET /json HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /delay?ms=100 HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Type: text/a\r\n\r\nfirst"
        b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nContent-Type: text/b\r\n\r\nsecond"
    )
    responses = exchange(beast_server.http_port, raw, count=6)
    assert [r.status for r in responses] == [200, 200, 200, 404, 200, 200]
    assert responses[0].body == b'{"message":"Hello, World!"}'
    assert responses[1].body == b"Hello, World!\n"
    assert (responses[2].body, responses[2].header("content-type")) == (b"first", "text/a")
    assert responses[4].body == b"Hello, World!\n"
    assert (responses[5].body, responses[5].header("content-type")) == (b"second", "text/b")


def test_pipelined_burst_in_many_segments(beast_server):
    """100 pipelined requests sent byte-split across segments still come back in order."""
    requests = b"".join(
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%d" % (len(str(i)), i)
        for i in range(100)
    )
    with connect(beast_server.http_port) as sock:
        for offset in range(0, len(requests), 777):
            sock.sendall(requests[offset : offset + 777])
        stream = sock.makefile("rb")
        bodies = [read_response(stream).body for _ in range(100)]
    assert bodies == [str(i).encode() for i in range(100)]


def test_connection_close_is_honoured(beast_server):
    with connect(beast_server.http_port) as sock:
        sock.sendall(
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /json HTTP/1.1\r\n\r\n"
        )
        stream = sock.makefile("rb")
        resp = read_response(stream)
        assert resp.status == 200 and resp.header("connection") == "close"
        assert stream.read() == b""  # closed; the second request is not answered


def test_http_1_0_closes_by_default(beast_server):
    with connect(beast_server.http_port) as sock:
        sock.sendall(b"GET /plaintext HTTP/1.0\r\n\r\n")
        stream = sock.makefile("rb")
        resp = read_response(stream)
        assert resp.status == 200 and resp.body == b"Hello, World!\n"
        assert resp.header("connection") == "close"
        assert stream.read() == b""


def test_http_1_0_keep_alive(beast_server):
    with connect(beast_server.http_port) as sock:
        stream = sock.makefile("rb")
        for _ in range(3):
            sock.sendall(b"GET /json HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            resp = read_response(stream)
            assert resp.status == 200 and resp.header("connection") == "keep-alive"


def test_connection_close_ends_with_a_fin_and_pipelined_input_after_it_still_gets_the_answer(
    beast_server,
):
    """A clean 'Connection: close' is closed at once (no lingering: nothing is unread); a request
    pipelined behind it is unread input, so the server lingers and the answer is not lost to a
    reset. Either way the client reads the whole response and then EOF."""
    from server_helpers import read_until_closed

    clean = connect(beast_server.http_port)
    clean.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = read_until_closed(clean)
    clean.close()
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"Hello, World!\n")
    assert data.count(b"HTTP/1.1") == 1
    for _ in range(20):  # the unread request behind the close must not turn the answer into a reset
        busy = connect(beast_server.http_port)
        busy.sendall(
            b"GET /json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        data = read_until_closed(busy)
        busy.close()
        assert data.startswith(b"HTTP/1.1 200") and data.endswith(b'{"message":"Hello, World!"}')
        assert data.count(b"HTTP/1.1") == 1
