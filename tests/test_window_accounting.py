"""Exact window accounting (issue 11): every request started (closed loop) or due (open loop)
inside the measured window has exactly one outcome - a response measured to its last byte
(the run drains after the window, up to the timeout), an error, or `unfinished` - and nothing
started in the warm-up is counted. Scripted servers on 127.0.0.1 make the counts exact; the
times in these scripts leave wide margins, so a busy machine changes no count."""

from __future__ import annotations

import socket
import threading
import time

from fault_servers import OK, FaultServer, Hangup

import loadbench


def kinds(r: loadbench.Result) -> dict[str, int]:
    return {k: v for k, v in r.errors.items() if v}


def slow_answers(delay_s: float) -> "callable":
    def answer(conn: socket.socket, index: int) -> None:
        time.sleep(delay_s)
        conn.sendall(OK)

    return answer


# --- defect 1: the closed loop kept only responses that completed inside the window --------


def test_closed_loop_a_request_in_flight_at_the_window_end_is_measured_to_its_last_byte():
    # One connection, every answer 0.6 s late, a 1 s window: requests start at 0 and ~0.6 s
    # (inside), the second completes at ~1.2 s (after the window) and a third would start
    # after it. Before: 1 response (the second was dropped). Now: both, each 0.6 s or more.
    with FaultServer(slow_answers(0.6)) as server:
        start = time.monotonic()
        r = loadbench.run(server.url(), connections=1, duration=1.0, timeout=5.0)
        elapsed = time.monotonic() - start
    assert r.responses == 2 == server.requests
    assert r.error_count == 0 and r.unfinished == 0
    assert r.latency.count == 2 and r.latency.min >= 600_000
    assert r.rps == 2 / r.duration_s
    assert (
        int(r.timeline_arrays()["responses"].sum()) == 2
    )  # the drained one is in the last interval
    assert elapsed < 1.0 + 5.0  # the drain ends with the last response, not at the timeout


def test_a_request_started_in_the_warmup_is_never_counted_whenever_it_finishes():
    # warm-up 0.5 s, window 0.5 s, answers 0.7 s late: the first request (warm-up) completes
    # inside the window and is not counted; the second starts at ~0.7 s (inside) and
    # completes at ~1.4 s (in the drain) and is counted; no third starts.
    with FaultServer(slow_answers(0.7)) as server:
        r = loadbench.run(server.url(), connections=1, duration=0.5, warmup=0.5, timeout=5.0)
    assert server.requests == 2
    assert r.responses == 1 and r.error_count == 0 and r.unfinished == 0
    assert r.latency.min >= 700_000
    assert r.bytes_read == len(OK)  # the warm-up response's bytes are not counted either


# --- defect 2: the open loop lost requests due but unanswered or unsent at the window end ---


def test_open_loop_a_stall_at_the_end_is_in_the_outcomes_and_the_corrected_tail():
    # 200/s for 1 s (exactly 200 due: one every 5 ms), two connections, no growth. The server
    # answers at once until 0.7 s, then never again: the two requests in flight time out in the
    # drain (0.8 s timeout, so not before the window ends: no connection is reopened), the ~60
    # due after the stall are never sent. Before: they vanished and the corrected p90 was
    # ~1 ms. Now: responses + errors + unfinished == due, and the unfinished enter the
    # corrected histogram with the time they had waited when the drain ended (>= 0.5 s).
    frozen = threading.Event()
    release = threading.Event()
    freeze_at = [0.0]

    def answer(conn: socket.socket, index: int) -> None:
        if time.monotonic() >= freeze_at[0]:
            frozen.set()
            release.wait(10)
            raise Hangup
        conn.sendall(OK)

    with FaultServer(answer) as server:
        freeze_at[0] = time.monotonic() + 0.7
        try:
            r = loadbench.run(
                server.url(), connections=2, max_connections=2, rate=200, duration=1.0, timeout=0.8
            )
        finally:
            release.set()
    assert frozen.is_set()
    assert r.due == 200
    assert kinds(r) == {"timeout": 2}
    assert r.unfinished >= 200 - 0.7 * 200 - 2  # everything due after the stall began
    assert r.responses + r.error_count + r.unfinished == r.due
    assert r.sends == r.responses + 2 == server.requests
    # the corrected histogram holds the responses and the unfinished (their waits, lower bounds)
    assert r.latency.count == r.responses + r.unfinished
    assert r.latency.percentile(90) >= 200_000
    assert r.latency_uncorrected.percentile(90) < 200_000  # the answered ones were quick
    d = r.to_dict()
    assert d["unfinished"] == r.unfinished and d["rate"]["due"] == 200
    back = loadbench.Result.from_json(r.to_json())
    assert back.unfinished == r.unfinished and back.due == 200


def test_open_loop_outcomes_equal_due_on_a_healthy_server():
    with FaultServer(lambda conn, i: conn.sendall(OK)) as server:
        r = loadbench.run(
            server.url(), connections=2, max_connections=4, rate=400, duration=0.5, warmup=0.2
        )
    assert r.due == 200  # one every 2.5 ms in a 0.5 s window; the warm-up's are not due in it
    assert r.responses == 200 and r.error_count == 0 and r.unfinished == 0
    assert r.sends == r.lateness.count == 200
    assert server.requests >= r.sends  # plus the warm-up's


def test_open_loop_a_request_due_at_the_window_end_is_sent_in_the_drain():
    # Every answer takes 0.3 s, so each request due in the window needs a connection of its
    # own; the last is due 50 us before the window ends, and its connection comes up after
    # the end. Before: it waited in the queue and ended `unfinished` on a healthy server (about
    # one per open-loop cell). Now what was due is sent on the connection that came up, in the
    # drain; only opening connections stops at the end.
    with FaultServer(slow_answers(0.3)) as server:
        r = loadbench.run(
            server.url(), connections=1, max_connections=16, rate=20, duration=0.25005, timeout=3.0
        )
    assert r.due == 6  # at 0, 50, ..., 250 ms
    assert r.responses == 6 == server.requests
    assert r.error_count == 0 and r.unfinished == 0
    assert r.latency.min >= 300_000


# --- defect 4: a request re-sent after the server closed an idle keep-alive connection ------


def test_open_loop_a_resent_request_counts_once():
    # The server answers one request per connection and hangs up on the next (a keep-alive
    # timeout racing the client): every second send goes out again on a fresh connection.
    # Before: each re-send counted again in `sends` and in the lateness histogram.
    def answer(conn: socket.socket, index: int) -> None:
        if index > 0:
            raise Hangup
        conn.sendall(OK)

    with FaultServer(answer) as server:
        r = loadbench.run(
            server.url(), connections=1, max_connections=1, rate=100, duration=1.0, timeout=2.0
        )
    assert r.due == 100
    assert r.error_count == 0
    assert r.responses + r.unfinished == 100
    assert r.sends <= r.due and r.sends == r.lateness.count
    assert r.sends >= r.responses
    assert r.reconnects > 0
    # what the server saw: every request once, plus the re-sent ones
    assert r.sends < server.requests <= r.sends + r.reconnects


def test_the_issues_closed_loop_scenario_keeps_every_slow_request(server_factory):
    # 1 request in 67 (1.5 %) takes 900 ms, the rest are immediate; 20 connections, 1.5 s.
    # Before: a slow request still in flight at the window's end was dropped (with probability
    # ~0.9 s / window), so the slow ones fell below 1 % and p99 printed a millisecond or so.
    # Now every request started in the window is measured: exactly the server's /delay count
    # is at >= 900 ms, they are ~1.5 % of the responses, and p99 is one of them.
    server = server_factory()
    templates = [{"path": "/plaintext"}] * 66 + [{"path": "/delay?ms=900"}]
    r = loadbench.run(
        server.url("/"), connections=20, duration=1.5, requests_list=templates, timeout=5.0
    )
    served = server.stop()["requests"]
    assert r.error_count == 0 and r.unfinished == 0
    assert r.responses == served["plaintext"] + served["delay"]
    low, counts = r.latency.buckets()
    assert int(counts[low >= 899_000].sum()) == served["delay"]
    assert served["delay"] / r.responses >= 0.01
    assert r.percentile(99) >= 900_000
