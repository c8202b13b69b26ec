"""The Beast server against hostile and broken clients.

Every case: the server survives, a well-behaved client on another connection is served
while (or right after) the abuse happens, and the server's file descriptors return to their
baseline (no leaked connection). The native server runs with short timeouts so that
timeouts are observed within the test's few seconds.
"""

from __future__ import annotations

import os
import resource
import socket
import ssl
import time

import pytest
from abuse_helpers import (
    cpu_seconds,
    fd_count,
    raw_connect,
    reset_close,
    send_ignoring_close,
    served,
    served_tls,
    wait_until,
)
from server_helpers import connect, read_response, read_until_closed

HEADER_TIMEOUT_MS = 800
IDLE_TIMEOUT_MS = 1500


@pytest.fixture
def server(server_factory):
    srv = server_factory(header_timeout_ms=HEADER_TIMEOUT_MS, idle_timeout_ms=IDLE_TIMEOUT_MS)
    srv.baseline_fds = fd_count(srv.pid)
    return srv


def assert_back_to_baseline(srv, timeout: float = 5.0) -> None:
    assert wait_until(lambda: fd_count(srv.pid) == srv.baseline_fds, timeout), (
        f"server holds {fd_count(srv.pid)} fds, baseline {srv.baseline_fds}"
    )
    assert srv.proc.poll() is None, "server died"


# --- slow clients ----------------------------------------------------------------------


def test_many_slowloris_connections_are_all_closed_and_others_served(server):
    slow = [connect(server.http_port) for _ in range(40)]
    for s in slow:
        s.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n")
    start = time.monotonic()
    served_while_slow = 0
    while time.monotonic() - start < 0.6:  # trickle while staying under the header timeout
        for s in slow:
            s.sendall(b"X-a: b\r\n")
        assert served(server.http_port)
        served_while_slow += 1
        time.sleep(0.1)
    assert served_while_slow >= 3
    for s in slow:  # each is cut off by the header timeout, not by our silence
        s.settimeout(3.0)
        assert read_until_closed(s) == b""
        s.close()
    assert time.monotonic() - start < HEADER_TIMEOUT_MS / 1000 + 2.0
    assert served(server.http_port)
    assert_back_to_baseline(server)


def test_slow_body_sender_is_dropped_by_the_idle_timeout(server):
    sock = connect(server.http_port)
    sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc")
    start = time.monotonic()
    assert served(server.http_port)
    sock.settimeout(IDLE_TIMEOUT_MS / 1000 + 3.0)
    assert read_until_closed(sock) == b""
    assert time.monotonic() - start >= IDLE_TIMEOUT_MS / 1000 - 0.2
    sock.close()
    assert_back_to_baseline(server)


def test_client_that_never_reads_its_responses_is_dropped(server):
    # Pipelined echo requests whose responses fill both socket buffers; the server's write
    # stalls and the idle deadline (armed per write) closes the connection.
    sock = raw_connect(server.http_port, rcvbuf=4096)
    body = b"x" * 60000
    request = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    send_ignoring_close(sock, request * 100)
    assert served(server.http_port)
    assert_back_to_baseline(server, timeout=IDLE_TIMEOUT_MS / 1000 + 5.0)
    sock.close()


# --- vanishing clients -------------------------------------------------------------------


@pytest.mark.parametrize("abrupt", [False, True], ids=["fin", "rst"])
def test_clients_vanishing_mid_request(server, abrupt):
    partials = [
        b"GET /plain",
        b"GET /plaintext HTTP/1.1\r\nHost: x\r\n",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"y" * 5000,
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc",
        b"GET /delay?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n",
    ]
    for partial in partials * 5:
        sock = connect(server.http_port)
        sock.sendall(partial)
        reset_close(sock) if abrupt else sock.close()
    assert served(server.http_port)
    assert_back_to_baseline(server)


@pytest.mark.parametrize("abrupt", [False, True], ids=["fin", "rst"])
def test_clients_vanishing_mid_response(server, abrupt):
    body = b"z" * (512 * 1024)
    for _ in range(10):
        sock = raw_connect(server.http_port, rcvbuf=4096)
        sock.sendall(
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        )
        assert sock.recv(1024).startswith(b"HTTP/1.1 200")  # the response has begun
        reset_close(sock) if abrupt else sock.close()
    for _ in range(10):  # many pipelined responses, then gone without reading them
        sock = connect(server.http_port)
        sock.sendall(b"GET /json HTTP/1.1\r\nHost: x\r\n\r\n" * 2000)
        reset_close(sock) if abrupt else sock.close()
    assert served(server.http_port)
    assert_back_to_baseline(server)


def test_client_vanishing_while_its_delay_is_pending(server):
    for _ in range(10):
        sock = connect(server.http_port)
        sock.sendall(b"GET /delay?ms=200 HTTP/1.1\r\nHost: x\r\n\r\n")
        reset_close(sock)
    assert served(server.http_port)
    time.sleep(0.3)  # the timers fire into closed connections
    assert served(server.http_port)
    assert_back_to_baseline(server)


# --- oversized input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,head,stream",
    [
        ("endless header line", b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: ", b"a" * (1 << 20)),
        ("endless request line", b"GET /", b"b" * (1 << 20)),
        ("ten thousand headers", b"GET / HTTP/1.1\r\nHost: x\r\n", b"A: b\r\n" * 10000),
        (
            "huge content-length",
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n",
            b"c" * (1 << 20),
        ),
        (
            "endless chunked body",
            b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"4000\r\n" + b"d" * 0x4000 + b"\r\n",
        ),
        (
            "giant chunk size",
            b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"ffffffffffffffffffff\r\n",
        ),
        (
            "endless chunk extension",
            b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;",
            b"e" * (1 << 20),
        ),
    ],
)
def test_oversized_input_gets_an_error_answer_or_is_closed(server, name, head, stream):
    sock = connect(server.http_port, timeout=5)
    sock.sendall(head)
    repeats = 1 if len(stream) >= (1 << 20) else (2 << 20) // len(stream)
    send_ignoring_close(sock, stream * repeats)
    try:
        answer = read_until_closed(sock)
    except socket.timeout:
        pytest.fail(f"{name}: the server neither answered nor closed")
    finally:
        sock.close()
    if answer:
        status = int(answer.split(b" ", 2)[1])
        assert status in (400, 413, 431), (name, answer[:200])
    assert served(server.http_port), name
    assert_back_to_baseline(server)


def test_oversized_answers_are_the_documented_statuses(server):
    with connect(server.http_port) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n" + b"A: b\r\n" * 2000 + b"\r\n")
        assert read_response(sock.makefile("rb")).status == 431
    with connect(server.http_port) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n")
        assert read_response(sock.makefile("rb")).status == 413


# --- out of file descriptors -----------------------------------------------------------


def test_emfile_neither_crashes_nor_spins_and_recovers(server_factory):
    server = server_factory(idle_timeout_ms=20_000)  # the flood idles for seconds on purpose
    server.baseline_fds = fd_count(server.pid)
    fd_limit = 64
    soft, hard = resource.prlimit(server.pid, resource.RLIMIT_NOFILE)
    resource.prlimit(
        server.pid, resource.RLIMIT_NOFILE, (fd_limit, hard)
    )  # the soft limit is what accept hits
    keep_alive = connect(server.http_port)  # a client that got in before the flood

    def ask(sock: socket.socket) -> int:
        sock.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
        return read_response(sock.makefile("rb")).status

    assert ask(keep_alive) == 200
    # Far more connections than the server has descriptors: the kernel completes them all
    # (listen backlog), the server accepts until EMFILE and must then wait, not spin.
    flood = [
        socket.create_connection(("127.0.0.1", server.http_port), timeout=5)
        for _ in range(3 * fd_limit)
    ]
    assert wait_until(lambda: fd_count(server.pid) >= fd_limit - 1, 5.0), fd_count(server.pid)
    cpu_before, wall_before = cpu_seconds(server.pid), time.monotonic()
    time.sleep(2.0)
    cpu_used = cpu_seconds(server.pid) - cpu_before
    wall = time.monotonic() - wall_before
    assert cpu_used < 0.25 * wall, (
        f"server used {cpu_used:.2f} s CPU in {wall:.2f} s while out of fds"
    )
    assert server.proc.poll() is None
    assert ask(keep_alive) == 200  # established connections are still served
    for sock in flood:
        sock.close()
    # Descriptors free up: the queued (now closed) connections drain and new ones are served.
    assert wait_until(lambda: served(server.http_port, timeout=2.0), 10.0)
    keep_alive.close()
    resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (soft, hard))
    assert_back_to_baseline(server)
    stopped = server.stop()
    assert stopped["connections_open"] == 0


# --- TLS abuse ---------------------------------------------------------------------------


@pytest.fixture
def tls_server(server_factory):
    srv = server_factory(
        tls=True, header_timeout_ms=HEADER_TIMEOUT_MS, idle_timeout_ms=IDLE_TIMEOUT_MS
    )
    srv.baseline_fds = fd_count(srv.pid)
    return srv


def client_hello_bytes() -> bytes:
    """The first flight of a real TLS handshake (a ClientHello), produced by Python's ssl."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


@pytest.mark.parametrize(
    "payload",
    [
        os.urandom(4096),
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"\x16\x03\x01\xff\xff" + b"\x00" * 200,  # a handshake record header announcing 64 KiB
        b"\x16\x03\x03\x00\x05\x01\x00\x00\x01\x00",  # a truncated ClientHello
    ],
    ids=["random", "plain-http", "huge-record", "truncated-hello"],
)
def test_tls_garbage_is_rejected_and_others_served(tls_server, payload):
    for abrupt in (False, True):
        sock = connect(tls_server.https_port, timeout=5)
        sock.sendall(payload)
        if abrupt:
            reset_close(sock)
        else:
            try:
                read_until_closed(sock)  # an alert and a close, or just a close
            except socket.timeout:
                pass  # waiting for more of the record: the handshake deadline closes it
            sock.close()
    assert served_tls(tls_server.https_port)
    assert_back_to_baseline(tls_server)


def test_aborted_and_stalled_tls_handshakes(tls_server):
    hello = client_hello_bytes()
    stalled = []
    for i in range(20):
        sock = connect(tls_server.https_port, timeout=5)
        sock.sendall(hello)
        if i % 2:
            reset_close(sock)  # aborted right after the ClientHello
        else:
            stalled.append(sock)  # never answers the ServerHello
    silent = [connect(tls_server.https_port) for _ in range(10)]  # connect, send nothing
    assert served_tls(tls_server.https_port)
    for sock in stalled + silent:  # all are closed by the handshake deadline
        sock.settimeout(HEADER_TIMEOUT_MS / 1000 + 3.0)
        read_until_closed(sock)
        sock.close()
    assert served_tls(tls_server.https_port)
    assert_back_to_baseline(tls_server)


def test_tls_client_vanishing_mid_response(tls_server):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    body = b"q" * (256 * 1024)
    for _ in range(5):
        raw = raw_connect(tls_server.https_port, rcvbuf=4096)
        tls = ctx.wrap_socket(raw, server_hostname="localhost")
        tls.sendall(
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        )
        assert tls.recv(100).startswith(b"HTTP/1.1 200")
        reset_close(tls)
    assert served_tls(tls_server.https_port)
    assert_back_to_baseline(tls_server)
