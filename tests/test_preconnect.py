"""Pre-connect (connect_ahead): a run opens its connections, TLS handshakes included, before its
clock starts, so the window begins on open connections and measures no connection setup - what
every distributed shard does before the common instant."""

from __future__ import annotations

import time

import pytest

from loadbench.core.run import connect_ahead
from loadbench.sweep.targets import free_port


def _finish(handle):
    handle.begin()
    assert handle.wait(30)
    return handle.result()


def test_the_window_starts_on_open_connections(server_factory):
    server = server_factory()
    handle, opened = connect_ahead(
        server.url("/plaintext"), within=5, connections=4, requests=1000, warmup=0
    )
    assert opened == 4
    time.sleep(0.3)  # open and idle: the server has them, no request yet
    r = _finish(handle)
    counters = server.stop()
    assert r.responses == 1000 and r.error_count == 0
    assert r.preconnected == 4 and r.connections_opened == 0  # none opened inside the window
    assert r.to_dict()["generator"]["preconnected"] == 4
    assert counters["connections_accepted"] == 4 + 1  # and the priming one (core/prime.py)
    assert sum(counters["requests"].values()) == 1000


@pytest.mark.parametrize("h2", [False, True], ids=["https", "h2"])
def test_tls_handshakes_finish_before_the_window(server_factory, h2):
    server = server_factory(tls=True)
    handle, opened = connect_ahead(
        server.url("/plaintext", https=True),
        within=5,
        connections=3,
        requests=300,
        warmup=0,
        insecure=True,
        **({"protocol": "h2", "streams": 4} if h2 else {}),
    )
    assert opened == 3
    r = _finish(handle)
    counters = server.stop()
    assert r.responses == 300 and r.error_count == 0
    assert r.preconnected == 3 and r.tls_handshakes == 0 and r.connections_opened == 0
    assert counters["connections_accepted"] == 3 + 1  # and the priming one (core/prime.py)


def test_an_open_loop_starts_its_schedule_on_the_open_pool(beast_server):
    handle, opened = connect_ahead(
        beast_server.url("/plaintext"),
        within=5,
        connections=4,
        max_connections=4,
        rate=2000,
        duration=0.5,
        warmup=0,
    )
    assert opened == 4
    r = _finish(handle)
    assert r.connections_opened == 0 and r.preconnected == 4
    assert r.due == r.responses + r.error_count + r.unfinished and r.unfinished == 0


def test_nothing_listening_opens_nothing_ahead_and_the_run_counts_its_errors():
    handle, opened = connect_ahead(
        f"http://127.0.0.1:{free_port()}/", within=2, connections=2, requests=5, timeout=2
    )
    assert opened == 0
    r = _finish(handle)
    assert r.preconnected == 0 and r.responses == 0
    assert r.errors.get("connect", 0) == 5  # counted in the run, as without pre-connect


def test_a_connection_the_server_closed_while_it_waited_is_reopened(server_factory):
    # The server's idle timeout ends the pre-connected connections before the clock starts: the
    # run re-sends on fresh connections (as on any stale keep-alive connection), no error.
    server = server_factory(idle_timeout_ms=100)
    handle, opened = connect_ahead(
        server.url("/plaintext"), within=5, connections=2, requests=200, warmup=0
    )
    assert opened == 2
    time.sleep(0.5)
    r = _finish(handle)
    assert r.responses == 200 and r.error_count == 0
    assert server.stop()["connections_accepted"] >= 4
