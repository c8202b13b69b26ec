"""The generator against servers that fail in the ways real ones do.

Extends tests/test_generator.py (which provokes one error of each kind: refused, closed
mid-response, garbage, silence): here a real server process is killed or frozen mid-run,
connections are reset, closed before an answer, answered with a wrong Content-Length or one
byte a second. In every case the run ends on time, each failure is counted under its kind
(exactly, where the script makes it exact), and the Result still holds what was measured:
responses, latency histogram and timeline agree with each other.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest
from fault_servers import OK, FaultServer, Hangup, dribble, reset

import loadbench


def assert_result_consistent(r: loadbench.Result) -> None:
    """Everything measured is kept and adds up."""
    assert r.latency.count == r.responses
    assert sum(r.status_codes.values()) == r.responses
    tl = r.timeline_arrays()
    assert int(tl["responses"].sum()) == r.responses
    assert int(tl["errors"].sum()) == r.error_count
    again = loadbench.Result.from_json(r.to_json())
    assert again.responses == r.responses and again.errors == r.errors


def kinds(r: loadbench.Result) -> dict[str, int]:
    """The error kinds that occurred (the Result lists every kind, zeros included)."""
    return {k: v for k, v in r.errors.items() if v}


def timed_run(url: str, **kwargs: object) -> tuple[loadbench.Result, float]:
    start = time.monotonic()
    r = loadbench.run(url, **kwargs)
    return r, time.monotonic() - start


# --- a real server process that dies or freezes mid-run ----------------------------------


def test_server_killed_mid_run(server_factory):
    server = server_factory()
    killer = threading.Timer(0.6, lambda: os.kill(server.pid, signal.SIGKILL))
    killer.start()
    try:
        r, elapsed = timed_run(server.url("/plaintext"), connections=4, duration=2.0, timeout=1.0)
    finally:
        killer.cancel()
    assert elapsed < 2.0 + 1.5, "the run did not end on time"
    assert r.responses > 0, "responses before the kill were lost"
    assert r.status_codes == {200: r.responses}
    assert kinds(r).get("connect", 0) > 0, r.errors  # after the kill: refused
    assert set(kinds(r)) <= {"connect", "read", "write"}, kinds(r)
    assert r.duration_s == pytest.approx(2.0, abs=0.05)
    assert_result_consistent(r)


def test_server_frozen_mid_run(server_factory):
    server = server_factory()
    freezer = threading.Timer(0.5, lambda: os.kill(server.pid, signal.SIGSTOP))
    freezer.start()
    try:
        r, elapsed = timed_run(server.url("/plaintext"), connections=3, duration=2.0, timeout=0.4)
    finally:
        freezer.cancel()
        os.kill(server.pid, signal.SIGCONT)
    assert elapsed < 2.0 + 1.5
    assert r.responses > 0
    # Frozen 1.5 s with a 0.4 s timeout: every connection times out, again and again
    # (new connections complete in the kernel backlog, then wait like the old ones).
    assert kinds(r).get("timeout", 0) >= 3 * 3, kinds(r)
    assert set(kinds(r)) == {"timeout"}, kinds(r)
    assert_result_consistent(r)


# --- connections reset or closed -------------------------------------------------------------


def test_connection_reset_after_the_request_is_a_read_error():
    with FaultServer(lambda conn, i: reset(conn)) as server:
        r, elapsed = timed_run(server.url(), connections=2, requests=20, timeout=2.0)
    assert r.responses == 0
    assert kinds(r) == {"read": 20}, kinds(r)
    assert "reset" in r.first_error.lower()
    assert_result_consistent(r)


def test_reset_on_every_second_request_counts_exactly_half():
    def answer(conn: socket.socket, index: int) -> None:
        if index == 1:
            reset(conn)
        conn.sendall(OK)

    with FaultServer(answer) as server:
        r = loadbench.run(server.url(), connections=1, requests=20, timeout=2.0)
    # fresh connection: 200, then reset on the reused one. A reset before any response
    # byte on a reused connection is retried once on a new connection (where it is answered).
    assert r.responses + r.error_count == 20
    assert r.status_codes == {200: r.responses}
    assert set(kinds(r)) <= {"read"}
    assert_result_consistent(r)


def test_closing_before_answering_is_a_read_error_before_any_byte():
    def answer(conn: socket.socket, index: int) -> None:
        raise Hangup

    with FaultServer(answer) as server:
        r = loadbench.run(server.url(), connections=3, requests=30, timeout=2.0, prime=False)
    assert r.responses == 0 and kinds(r) == {"read": 30}, kinds(r)
    assert "before any response byte" in r.first_error
    assert server.connections == 30
    assert_result_consistent(r)


def test_close_of_an_idle_keepalive_connection_is_retried_not_counted():
    # Answers one request per connection, then closes when the next one arrives (like a
    # server whose keep-alive timeout raced the client): the generator reconnects and resends.
    def answer(conn: socket.socket, index: int) -> None:
        if index > 0:
            raise Hangup
        conn.sendall(OK)

    with FaultServer(answer) as server:
        r = loadbench.run(server.url(), connections=2, requests=40, timeout=2.0)
    assert r.responses == 40 and r.error_count == 0, kinds(r)
    assert r.reconnects >= 38
    assert_result_consistent(r)


# --- wrong framing ------------------------------------------------------------------------


def test_content_length_longer_than_the_body_then_close_is_a_read_error():
    def answer(conn: socket.socket, index: int) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
        raise Hangup

    with FaultServer(answer) as server:
        r = loadbench.run(server.url(), connections=2, requests=10, timeout=2.0)
    assert r.responses == 0 and kinds(r) == {"read": 10}, kinds(r)
    assert "mid-response" in r.first_error
    assert_result_consistent(r)


def test_content_length_longer_than_the_body_then_silence_is_a_timeout():
    def answer(conn: socket.socket, index: int) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")

    with FaultServer(answer) as server:
        r, elapsed = timed_run(server.url(), connections=2, duration=1.1, timeout=0.3)
    assert r.responses == 0
    # 2 connections x requests started at about 0, 0.3, 0.6 and 0.9 s (the last times out in
    # the drain after the window); a fifth would start at 1.2 s, 0.1 s after the window.
    assert kinds(r) == {"timeout": 8}, r.errors
    assert elapsed < 2.5
    assert_result_consistent(r)


def test_content_length_shorter_than_the_body_is_a_parse_error():
    # 14 bytes of body announced as 5: the 9 left over can only be misread as the next
    # response. Whether they arrive with the response or later, they are a parse error.
    def answer(conn: socket.socket, index: int) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHello, World!\n")

    with FaultServer(answer) as server:
        r = loadbench.run(server.url(), connections=2, requests=10, timeout=2.0)
    assert r.responses == 0 and kinds(r) == {"parse": 10}, (r.status_codes, r.errors)
    assert_result_consistent(r)


@pytest.mark.parametrize(
    "response",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-Endless: " + b"a" * (70 * 1024),
    ],
    ids=[
        "conflicting-length",
        "negative-length",
        "bad-status",
        "bad-header",
        "bad-chunk-size",
        "chunk-overrun",
        "endless-header",
    ],
)
def test_malformed_framing_is_a_parse_error(response):
    with FaultServer(lambda conn, i: conn.sendall(response)) as server:
        r = loadbench.run(server.url(), connections=2, requests=10, timeout=2.0)
    assert r.responses == 0 and kinds(r) == {"parse": 10}, kinds(r)
    assert_result_consistent(r)


# --- slow servers -------------------------------------------------------------------------


def test_server_dribbling_one_byte_a_second_times_out_on_time():
    with FaultServer(dribble(OK, 1.0)) as server:
        r, elapsed = timed_run(server.url(), connections=3, duration=2.0, timeout=0.8)
    # The timeout bounds the whole response, not each read: a byte a second never resets it.
    assert r.responses == 0
    # 3 connections x 3 requests started at about 0, 0.8 and 1.6 s: the third times out in the
    # drain after the 2 s window (up to the 0.8 s timeout), and still counts.
    assert kinds(r) == {"timeout": 9}, r.errors
    assert r.unfinished == 0
    assert elapsed < 2.0 + 0.8 + 1.5
    assert r.bytes_read > 0
    assert_result_consistent(r)


def test_server_dribbling_fast_enough_is_measured_not_failed():
    with FaultServer(dribble(OK, 0.002)) as server:
        r = loadbench.run(server.url(), connections=2, requests=6, timeout=5.0)
    assert r.responses == 6 and r.error_count == 0
    assert r.latency.min >= len(OK) * 2000 * 0.9  # at least ~2 ms per byte
    assert_result_consistent(r)
