"""Priming (core/prime.py): before its clock a run opens one connection and closes it without a
request, as wrk's and wrk2's address check does - a server's state can change at its first
client close (CPython's asyncio: reports/server-state.md). The server sees exactly one more
connection and no more requests; --no-prime / prime=False leaves it out; a prime that cannot
connect is not an error of its own; HTTP/3 is never primed."""

from __future__ import annotations

import json
import socket
import threading

import loadbench
from loadbench.cli import main
from loadbench.core.options import RunOptions
from loadbench.core.prime import prime
from loadbench.sweep.targets import free_port


def test_a_run_primes_with_one_empty_connection_before_its_window(server_factory):
    server = server_factory()
    r = loadbench.run(server.url("/plaintext"), connections=3, requests=300)
    counters = server.stop()
    assert r.responses == 300 and r.error_count == 0
    assert r.to_dict()["config"]["prime"] is True
    # the run's three connections and the priming one, which carried no request
    assert counters["connections_accepted"] == 4
    assert sum(counters["requests"].values()) == 300


def test_no_prime_leaves_the_server_only_the_runs_connections(server_factory, tmp_path):
    server = server_factory()
    r = loadbench.run(server.url("/plaintext"), connections=3, requests=300, prime=False)
    out = tmp_path / "r.json"
    code = main(
        ["run", server.url("/plaintext"), "-c", "2", "-n", "100", "--no-prime", "--json", str(out)]
    )
    counters = server.stop()
    assert r.responses == 300 and r.to_dict()["config"]["prime"] is False
    assert code == 0 and json.loads(out.read_text())["config"]["prime"] is False
    assert counters["connections_accepted"] == 3 + 2


def _listener(family: int, address) -> tuple[socket.socket, list[bytes]]:
    """A listener whose one accepted connection's first read is recorded: b"" is a connection
    the client closed without sending anything."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.bind(address)
    sock.listen(1)
    seen: list[bytes] = []

    def accept_one() -> None:
        conn, _ = sock.accept()
        with conn:
            conn.settimeout(5)
            seen.append(conn.recv(1024))

    threading.Thread(target=accept_one, daemon=True).start()
    return sock, seen


def _wait(seen: list[bytes]) -> None:
    for _ in range(500):
        if seen:
            return
        threading.Event().wait(0.01)


def test_the_priming_connection_is_closed_by_the_client_without_a_byte(tmp_path):
    sock, seen = _listener(socket.AF_INET, ("127.0.0.1", 0))
    with sock:
        assert prime(f"http://127.0.0.1:{sock.getsockname()[1]}/plaintext") is None
        _wait(seen)
    assert seen == [b""]
    path = str(tmp_path / "s.sock")
    sock, seen = _listener(socket.AF_UNIX, path)
    with sock:
        assert prime("http://localhost/plaintext", unix_socket=path) is None
        _wait(seen)
    assert seen == [b""]


def test_a_prime_that_cannot_connect_is_not_an_error_and_the_run_reports_its_own():
    url = f"http://127.0.0.1:{free_port()}/"
    why = prime(url)
    assert why is not None and "refused" in why.lower()
    r = loadbench.run(url, connections=1, requests=3, timeout=2)
    assert r.responses == 0 and r.error_count == 3
    assert {kind for kind, n in r.errors.items() if n} == {"connect"}


def test_http3_is_never_primed():
    assert RunOptions(protocol="h3").record("https://127.0.0.1:4433/")["prime"] is False
    assert RunOptions(protocol="h2").record("https://127.0.0.1:4433/")["prime"] is True
