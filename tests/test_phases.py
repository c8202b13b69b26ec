"""Where a request's time goes (core/phases.py): servers whose phases are known by construction,
and the exact counts every phase keeps beside the run's own counters.

The lower bounds are exact (a server that sleeps 20 ms cannot answer sooner); the upper bounds
leave room for a busy machine's late wake-ups, so no test here needs an idle one."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Callable

from cli_runner import loadbench_cli
from http_test_servers import ThreadedServer

import loadbench
from loadbench.core.phases import CONNECTION_PHASES, PHASES, RESPONSE_PHASES
from loadbench.core.server import ServerProcess

BODY_PIECES = 3  # the slow server's body: three pieces, 10 ms apart after its headers


class SlowBodyServer(ThreadedServer):
    """Keep-alive HTTP/1.1: each request is answered 20 ms after it arrived (its headers, the
    response's first byte), and its body follows in three pieces 10, 20 and 30 ms after them:
    time to first byte ~20 ms, transfer ~30 ms, by construction."""

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                buf = buf.split(b"\r\n\r\n", 1)[1]
                time.sleep(0.020)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n")
                for _ in range(BODY_PIECES):
                    time.sleep(0.010)
                    conn.sendall(b"x" * 10)
        except OSError:
            return
        finally:
            self._forget(conn)


class DelayingProxy:
    """A TCP proxy on 127.0.0.1 that holds the server's first bytes on each connection (the TLS
    ServerHello flight) for `delay_s`, and passes everything else through at once: the TLS
    handshake takes at least `delay_s` more than it would, and nothing else does."""

    def __init__(self, upstream_port: int, delay_s: float) -> None:
        self.upstream_port, self.delay_s = upstream_port, delay_s
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sockets += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, 0.0), daemon=True).start()
            threading.Thread(
                target=self._pipe, args=(upstream, client, self.delay_s), daemon=True
            ).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket, first_delay_s: float) -> None:
        try:
            while chunk := src.recv(65536):
                if first_delay_s:
                    time.sleep(first_delay_s)
                    first_delay_s = 0.0
                dst.sendall(chunk)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        self.listener.close()
        for s in self._sockets:
            try:
                s.close()
            except OSError:
                pass


def _ms(h) -> float:
    return h.percentile(50) / 1000


def test_first_byte_and_transfer_of_a_server_that_waits_then_streams() -> None:
    with SlowBodyServer() as server:
        r = loadbench.run(server.url("/"), connections=2, requests=40)
    assert r.error_count == 0 and r.responses == 40
    write, ttfb, transfer = (r.phases[p] for p in RESPONSE_PHASES)
    assert write.count == ttfb.count == transfer.count == 40
    assert 20 <= _ms(ttfb) < 40, _ms(ttfb)
    assert 30 <= _ms(transfer) < 60, _ms(transfer)
    assert write.percentile(99) < 5_000  # one small write
    # nothing was opened in the window (the connections came with the run's start)... or was:
    # either way, a keep-alive run's set-up phases count exactly its new connections
    assert r.phases.get("connect") is None or r.phases["connect"].count == r.connections_opened
    # the three add up to the service time (percentiles of sums are not sums: the medians here,
    # each tight, are)
    total = _ms(write) + _ms(ttfb) + _ms(transfer)
    assert abs(total - r.latency.percentile(50) / 1000) < 5, (total, r.latency.percentile(50))


def test_a_delayed_server_hello_shows_in_the_tls_phase_not_in_connect(
    server_factory: Callable[..., ServerProcess],
) -> None:
    server = server_factory(tls=True, http=False)
    proxy = DelayingProxy(server.https_port, delay_s=0.050)
    try:
        r = loadbench.run(
            f"https://127.0.0.1:{proxy.port}/plaintext", connections=2, requests=20,
            keepalive=False,
        )  # fmt: skip
    finally:
        proxy.close()
    assert r.error_count == 0 and r.responses == 20, r.first_error
    tls, connect = r.phases["tls_full"], r.phases["connect"]
    # one connection and one full handshake per request, each phase counted once
    assert connect.count == r.connections_opened == 20
    assert tls.count == r.tls_handshakes == 20 and "tls_resume" not in r.phases
    assert 50 <= _ms(tls) < 150, _ms(tls)
    assert _ms(connect) < 50, _ms(connect)  # the proxy accepts at once
    assert _ms(r.phases["ttfb"]) < 50  # the requests themselves pass undelayed


def test_resumed_handshakes_are_their_own_phase(
    server_factory: Callable[..., ServerProcess],
) -> None:
    server = server_factory(tls=True, http=False)
    r = loadbench.run(
        server.url("/plaintext", https=True), connections=1, requests=20, keepalive=False,
        tls_session_resumption=True,
    )  # fmt: skip
    assert r.error_count == 0 and r.responses == 20, r.first_error
    handshakes = sum(r.phases[p].count for p in ("tls_full", "tls_resume") if p in r.phases)
    assert handshakes == r.tls_handshakes == 20
    assert r.phases["tls_resume"].count == r.tls_resumed >= 18  # the first one or two full


def test_phases_count_every_response_of_the_window_over_h2_and_the_open_loop(
    server_factory: Callable[..., ServerProcess],
) -> None:
    server = server_factory()
    h2 = loadbench.run(
        server.url("/plaintext"), protocol="h2", connections=2, streams=4, requests=400
    )
    opened = loadbench.run(server.url("/plaintext"), rate=2000, requests=400, connections=4)
    for r in (h2, opened):
        assert r.error_count == 0 and r.responses == 400, r.first_error
        assert {r.phases[p].count for p in RESPONSE_PHASES} == {400}
        # no TLS, no QUIC: those phases are absent, not zero
        assert not set(r.phases) & {"tls_full", "tls_resume", "quic_full", "quic_resume"}


def test_the_json_and_the_summary_carry_the_phases(beast_server: ServerProcess, tmp_path) -> None:
    out = tmp_path / "r.json"
    proc = loadbench_cli(
        "run", beast_server.url("/plaintext"), "-c", "2", "-n", "300", "--disable-keepalive",
        "--no-progress", "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "  phases        write p50" in proc.stdout and "first byte p50" in proc.stdout
    assert "  set-up        connect p50" in proc.stdout and "(300)" in proc.stdout
    d = json.loads(out.read_text())
    assert list(d["phases"]) == [p for p in PHASES if p in d["phases"]]  # the engine's order
    assert d["phases"]["connect"]["count"] == d["connections_opened"] == 300
    assert d["phases"]["ttfb"]["count"] == d["responses"] == 300
    # written whole, so a result read back (and shards merged) keeps every phase exactly
    back = loadbench.Result.from_dict(d)
    assert {p: h.count for p, h in back.phases.items()} == {
        p: d["phases"][p]["count"] for p in d["phases"]
    }
    assert back.to_dict()["phases"] == d["phases"]
    assert set(CONNECTION_PHASES) & set(d["phases"]) == {"connect"}


def test_the_report_says_where_each_servers_time_goes(tmp_path) -> None:
    """Hand-made results whose phases are known: each repeat's first byte p50 is 100 us x (its
    repeat + 1) for beast and 10x that for py; the section shows each server's median over its
    repeats at its peak cell, per protocol, and nothing for a sweep without phases."""
    from sweep_data import table_rows, write_results_dir

    from loadbench.report.model import load as load_model
    from loadbench.report.phases import section
    from loadbench.sweep import results_folder as rs

    directory = write_results_dir(tmp_path / "r")
    assert section(load_model(directory)) == []  # recorded before phases: no section
    path = directory / rs.RESULTS_FILE
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for rec in records:
        if rec.get("status") != "ok" or rec.get("mode") != "closed" or not rec.get("result"):
            continue
        scale = 10 if rec["target"] == "py" else 1
        first_byte = 100 * scale * (rec["repeat"] + 1)
        rec["result"]["phases"] = {
            "write": {"count": 10, "p50": 1, "p99": 2},
            "ttfb": {"count": 10, "p50": first_byte, "p99": 2 * first_byte},
            "transfer": {"count": 10, "p50": 3, "p99": 4},
        }
    path.write_text("".join(json.dumps(rec) + "\n" for rec in records))
    lines = section(load_model(directory))
    text = "\n".join(lines)
    assert lines[0] == "## Where the time goes"
    rows = {row[0]: row for row in table_rows(text, "### HTTP/1.1")}
    # medians over the repeats of each phase's p50 / p99
    assert rows["beast"][3] == "200 us / 400 us", rows["beast"]
    assert rows["py"][3] == "2.00 ms / 4.00 ms", rows["py"]
    assert rows["beast"][2] == "1 us / 2 us" and rows["beast"][4] == "3 us / 4 us"


def test_a_generator_bound_cells_phases_carry_its_mark() -> None:
    """A § cell's connect and first byte include the generator's own delay: the row says so."""
    from loadbench.core.analysis import Spread
    from loadbench.report.cells import Aggregate
    from loadbench.report.phases import _table

    agg = Aggregate("beast", "http", "plaintext", "closed", 25, status="ok", generator_bound=True)
    agg.phases = {"ttfb": (Spread(90, 80, 100, 3), Spread(200, 190, 210, 3))}
    row = _table([("beast", agg)], ("ttfb",)).splitlines()[-1]
    assert row.startswith("| beast | plaintext, c=25 § | 90 us / 200 us |"), row


def test_a_phase_always_zero_is_dropped_and_the_widest_phase_is_named() -> None:
    """Issue 58: the write column read 0 us in all 33 keep-alive rows of a sweep and the one
    insight - on HTTP/2 go spends 3.10 ms and hypercorn 23.58 ms between a response's first and
    last byte - went unsaid. A phase under 1 us at p99 everywhere is dropped, with a line that
    says why; the phase whose p99 differs most between clean cells is named with both ends."""
    from loadbench.core.analysis import Spread
    from loadbench.report.cells import Aggregate
    from loadbench.report.phases import _table, silent, widest

    def cell(target: str, ttfb: float, transfer: float, **marks) -> tuple[str, Aggregate]:
        agg = Aggregate(target, "h2c", "plaintext", "closed", 25, status="ok", **marks)
        agg.phases = {
            "write": (Spread(0, 0, 0, 3), Spread(0, 0, 0, 3)),
            "ttfb": (Spread(ttfb / 2, 0, 0, 3), Spread(ttfb, 0, 0, 3)),
            "transfer": (Spread(transfer / 2, 0, 0, 3), Spread(transfer, 0, 0, 3)),
        }
        return target, agg

    cells = [cell("go", 900, 3_100), cell("hypercorn", 2_000, 23_580)]
    # a § cell's phases include the generator's delay: never the widest phase's end
    cells.append(cell("capped", 90_000, 90_000, generator_bound=True))
    assert silent(cells, ("write", "ttfb", "transfer")) == ["write"]
    header = _table(cells, ("write", "ttfb", "transfer")).splitlines()[0]
    assert "write" not in header and "first byte" in header and "transfer" in header
    assert widest(cells, ("write", "ttfb", "transfer")) == (
        "The phase that differs most between the servers here is *transfer*: at p99 "
        "hypercorn spends 23.58 ms in it, go 3.10 ms."
    )
    assert widest(cells[:1], ("ttfb",)) is None  # one server: nothing to compare
