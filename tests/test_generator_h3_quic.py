"""HTTP/3 run figures beyond the responses (issue 33): the "quic" block of the run JSON -
datagrams both ways, counted exactly (checked by a UDP relay between the generator and caddy
that counts what passes), the UDP socket buffers the kernel granted, the kernel's UDP receive
drops (machine-wide /proc/net/snmp), and the figures ngtcp2 0.12 cannot give, said as null with
a reason rather than a 0.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
from cli_runner import loadbench_cli
from test_generator_h3 import Caddy, needs_h3

import loadbench
from loadbench.core.result import Result

UDP_SEGMENT = 103  # linux/udp.h: a sendmsg() cmsg, the GSO segment size


class UdpRelay:
    """127.0.0.1:port -> target, one upstream socket per client address; counts datagrams.
    gso: the server's datagrams waiting together go back to the client as UDP GSO batches (one
    sendmsg with UDP_SEGMENT per run of equal sizes), as a GSO-sending server's would."""

    def __init__(self, target_port: int, gso: bool = False) -> None:
        self.gso = gso
        self.target = ("127.0.0.1", target_port)
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind(("127.0.0.1", 0))
        # room for a GSO burst while this thread is busy (the kernel drops what does not fit)
        self.front.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.port = self.front.getsockname()[1]
        self.to_server = 0
        self.to_client = 0
        self.last_datagram = time.monotonic()
        self.batches = 0  # GSO sends of several datagrams
        # QUIC connections seen: the source connection id of the clients' long-header packets
        # (constant for a connection's handshake, whatever UDP port it comes from - the kernel may
        # give a new socket the port a closed one had)
        self.client_ids: set[bytes] = set()
        self._upstreams: dict[tuple, socket.socket] = {}
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.front, selectors.EVENT_READ, None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.05):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data, peer = sock.recvfrom(65535)
                except OSError:
                    continue
                self.last_datagram = time.monotonic()
                if key.data is None:  # from a client
                    up = self._upstreams.get(peer)
                    if up is None:
                        up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                        up.connect(self.target)
                        self._upstreams[peer] = up
                        self._selector.register(up, selectors.EVENT_READ, peer)
                    self.to_server += 1
                    if data and data[0] & 0x80 and len(data) > 6:  # long header (RFC 9000 17.2)
                        dcid_end = 6 + data[5]
                        if len(data) > dcid_end:
                            scid_len = data[dcid_end]
                            self.client_ids.add(data[dcid_end + 1 : dcid_end + 1 + scid_len])
                    up.send(data)
                elif not self.gso:  # from the server, back to its client
                    self.to_client += 1
                    self.front.sendto(data, key.data)
                else:
                    self._send_batched(sock, data, key.data)

    def _send_batched(self, sock: socket.socket, first: bytes, peer: tuple) -> None:
        waiting = [first]
        sock.setblocking(False)
        try:
            while len(waiting) < 64:
                waiting.append(sock.recv(65535))
        except BlockingIOError:
            pass
        finally:
            sock.setblocking(True)
        self.to_client += len(waiting)
        while waiting:
            # a run of equal sizes, its last one possibly shorter (GSO's rule)
            size, run = len(waiting[0]), [waiting.pop(0)]
            while waiting and len(waiting[0]) <= size and sum(map(len, run)) + size < 60000:
                run.append(waiting.pop(0))
                if len(run[-1]) < size:
                    break
            if len(run) == 1:
                self.front.sendto(run[0], peer)
            else:
                self.batches += 1
                segment = [(socket.SOL_UDP, UDP_SEGMENT, struct.pack("H", size))]
                self.front.sendmsg([b"".join(run)], segment, 0, peer)

    def settle(self, quiet_s: float = 0.3, most_s: float = 5.0) -> None:
        """Wait until no datagram has come for ``quiet_s``: the last connections' closing
        datagrams leave as the run returns, and this thread - starved beside a CPU burner - may
        not have read them yet (a suite run beside one counted 426 of 429)."""
        deadline = time.monotonic() + most_s
        while time.monotonic() < deadline and time.monotonic() - self.last_datagram < quiet_s:
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for up in self._upstreams.values():
            up.close()
        self.front.close()
        self._selector.close()


@pytest.fixture
def relayed(tmp_path: Path) -> Iterator[tuple[Caddy, UdpRelay]]:
    server = Caddy(tmp_path)
    relay = None
    try:
        relay = UdpRelay(server.port)
        yield server, relay
    finally:
        if relay is not None:
            relay.stop()
        server.stop()


def granted(asked: int, limit_file: str) -> int:
    """What getsockopt reports for a buffer of `asked` bytes: the kernel doubles it (its own
    bookkeeping); root's SO_*BUFFORCE passes net.core.*mem_max, others are capped by it."""
    if os.geteuid() == 0:
        return 2 * asked
    return 2 * min(asked, int(Path(limit_file).read_text()))


@needs_h3
def test_h3_datagrams_are_counted_exactly_both_ways(relayed: tuple[Caddy, UdpRelay]) -> None:
    server, relay = relayed
    n, conns = 300, 3
    r = loadbench.run(
        f"https://127.0.0.1:{relay.port}/",
        protocol="h3",
        requests=n,
        connections=conns,
        timeout=5,
        headers={
            "Host": f"127.0.0.1:{server.port}"
        },  # caddy's site (its log), not the relay's port
    )
    assert r.responses == n and r.error_count == 0, r.first_error
    assert len(server.settled_log(n)) == n
    # Every datagram the generator sent passed the relay; beyond them only each connection's
    # CONNECTION_CLOSE, sent as it closes (after the last outcome, so outside the count).
    relay.settle()
    assert relay.to_server == r.quic_datagrams_sent + conns
    # It read what the server sent up to its last response; caddy's datagrams after that (the
    # last ACKs, its answer to the close) reach a closed socket.
    assert 0 < r.quic_datagrams_received <= relay.to_client
    # streams=1: each request leaves in a datagram of its own, each response arrives in one
    assert r.quic_datagrams_sent >= n and r.quic_datagrams_received >= n
    q = r.to_dict()["quic"]
    assert q["datagrams_sent"] == r.quic_datagrams_sent
    assert q["datagrams_received"] == r.quic_datagrams_received
    assert q["handshakes"] == conns == r.tls_handshakes
    for uncounted, reason in (
        ("packets_sent", "packets_reason"),
        ("lost", "loss_reason"),
        ("retransmitted", "loss_reason"),
    ):
        assert q[uncounted] is None and "ngtcp2 0.12" in q[reason]
    # 0-RTT is counted exactly (test_h3_resumption.py); none without --h3-0rtt
    assert q["zero_rtt"] == {"attempted": 0, "accepted": 0, "rejected": 0}
    assert "quic_zero_rtt_attempted" not in r.to_dict()
    assert q["udp_receive_buffer"] == granted(4 << 20, "/proc/sys/net/core/rmem_max")
    assert q["udp_send_buffer"] == granted(4 << 20, "/proc/sys/net/core/wmem_max")
    drops = q["kernel_drops"]
    assert isinstance(drops["in_errors"], int) and isinstance(drops["rcvbuf_errors"], int)
    assert drops["rcvbuf_errors"] <= drops["in_errors"]
    assert "machine-wide" in drops["scope"]
    # the QUIC counters live in the block only, and come back from it
    d = r.to_dict()
    assert "quic_datagrams_sent" not in d
    back = Result.from_dict(json.loads(json.dumps(d)))
    assert back.to_dict()["quic"] == q

    # The summary says the drops only when there were some.
    d["quic"]["kernel_drops"].update(in_errors=0, rcvbuf_errors=0)
    assert not any("kernel dropped" in line for line in Result.from_dict(d).summary_lines())
    d["quic"]["kernel_drops"].update(in_errors=7, rcvbuf_errors=5)
    text = "\n".join(Result.from_dict(d).summary_lines())
    assert "the kernel dropped 7 UDP datagrams (5 of them: receive buffer full)" in text
    assert "machine-wide" in text
    # A TCP run has no "quic" block.
    d["config"]["protocol"] = "h2"
    assert "quic" not in Result.from_dict(d).to_dict()


@needs_h3
def test_cli_h3_json_has_the_quic_block(relayed: tuple[Caddy, UdpRelay], tmp_path: Path) -> None:
    _, relay = relayed
    out = tmp_path / "r.json"
    url = f"https://127.0.0.1:{relay.port}/"
    done = loadbench_cli("run", url, "--h3", "-n", "40", "-c", "1", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert done.returncode == 0, done.stderr
    q = json.loads(out.read_text())["quic"]
    relay.settle()
    assert q["datagrams_sent"] + 1 == relay.to_server
    assert (
        f"datagrams sent {q['datagrams_sent']:,} in {q['send_calls']:,} send calls" in done.stdout
    )
    assert (
        f"received {q['datagrams_received']:,} in {q['receive_calls']:,} receive calls"
        in done.stdout
    )


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@needs_h3
@pytest.mark.skipif(not has_ipv6_loopback(), reason="no IPv6 loopback (::1) on this machine")
def test_h3_over_ipv6_loopback(tmp_path: Path) -> None:
    server = Caddy(tmp_path, host="::1")
    try:
        n = 200
        r = loadbench.run(server.url(), protocol="h3", requests=n, connections=2, timeout=5)
        assert r.url.startswith("https://[::1]:")
        assert r.responses == n and r.status_codes == {200: n}, r.first_error
        assert r.tls_handshakes == 2
        lines = server.settled_log(n)
        assert len(lines) == n
        assert {line["request"]["proto"] for line in lines} == {"HTTP/3.0"}
        assert {line["request"]["remote_ip"] for line in lines} == {"::1"}
    finally:
        server.stop()


@needs_h3
def test_h3_connection_per_request_is_a_quic_handshake_each(
    relayed: tuple[Caddy, UdpRelay],
) -> None:
    server, relay = relayed
    n = 60
    r = loadbench.run(
        f"https://127.0.0.1:{relay.port}/",
        protocol="h3",
        requests=n,
        connections=2,
        keepalive=False,
        timeout=5,
        headers={"Host": f"127.0.0.1:{server.port}"},
    )
    assert r.responses == n and r.error_count == 0, r.first_error
    # one QUIC connection, one handshake, one request each: handshakes per second = r.rps
    assert r.connections_opened == n and r.tls_handshakes == n
    assert r.to_dict()["quic"]["handshakes"] == n
    # n QUIC connections on the wire: n client connection ids in the handshake packets the relay
    # passed (not n UDP ports: a closed socket's port may be given to the next one)
    relay.settle()
    assert len(relay.client_ids) == n
    assert relay.to_server == r.quic_datagrams_sent + n  # each one's CONNECTION_CLOSE
    assert len(server.settled_log(n)) == n


def _big_file_run(url: str, host: str, gro: str, tmp_path: Path) -> dict:
    """`loadbench run --h3` of 1 MiB responses in a child (LOADBENCH_UDP_GRO is read once per
    process), its JSON back."""
    out = tmp_path / f"gro-{gro}.json"
    done = subprocess.run(
        [sys.executable, "-m", "loadbench", "run", url, "--h3", "-H", f"Host: {host}"]
        + ["-n", "8", "-c", "1", "-p", "4", "--timeout", "10", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, LOADBENCH_UDP_GRO=gro),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


@needs_h3
def test_h3_counts_are_exact_with_gro_on_and_forced_off(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "big.bin").write_bytes(os.urandom(1 << 20))
    home = tmp_path / "caddy"
    home.mkdir()
    server = Caddy(home, files=files)
    relay = None
    try:
        # caddy 2.6's quic-go sends no GSO batches: the relay makes them, as a newer server would
        relay = UdpRelay(server.port, gso=True)
        url, host = f"https://127.0.0.1:{relay.port}/files/big.bin", f"127.0.0.1:{server.port}"
        on = _big_file_run(url, host, "1", tmp_path)
        assert len(server.settled_log(8)) == 8
        batches_on = relay.batches
        off = _big_file_run(url, host, "0", tmp_path)
        lines = server.settled_log(16)
    finally:
        if relay is not None:
            relay.stop()
        server.stop()
    assert len(lines) == 16 and {line["size"] for line in lines} == {1 << 20}
    assert batches_on > 0 and relay.batches > batches_on  # both runs got GSO batches
    for d in (on, off):
        assert d["responses"] == 8 and d["status_codes"] == {"200": 8}, d["first_error"]
        assert d["errors"] == {k: 0 for k in d["errors"]}
        assert d["bytes_read"] > 8 << 20
        assert d["quic"]["datagrams_received"] >= (8 << 20) // 1500
    # Forced off: the kernel cuts each batch apart, one datagram per receive call.
    assert off["quic"]["udp_gro"] is False
    assert off["quic"]["receive_calls"] == off["quic"]["datagrams_received"]
    # On (where the kernel has it): a batch arrives whole and is cut apart here.
    if not on["quic"]["udp_gro"]:
        pytest.skip("the kernel refused UDP_GRO: only the forced-off half ran")
    assert on["quic"]["datagrams_received"] > on["quic"]["receive_calls"] > 0


def _upload_run(url: str, host: str, gso: str, body: Path, tmp_path: Path) -> dict:
    """`loadbench run --h3` POSTing `body` in a child (LOADBENCH_UDP_GSO is read once per
    process), its JSON back."""
    out = tmp_path / f"gso-{gso}.json"
    done = subprocess.run(
        [sys.executable, "-m", "loadbench", "run", url, "--h3", "-H", f"Host: {host}"]
        + ["-m", "POST", "--body-file", str(body), "-n", "10", "-c", "1", "--timeout", "10"]
        + ["--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, LOADBENCH_UDP_GSO=gso),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


@needs_h3
def test_h3_sent_counts_are_exact_with_gso_on_and_forced_off(
    relayed: tuple[Caddy, UdpRelay], tmp_path: Path
) -> None:
    server, relay = relayed
    body = tmp_path / "body.bin"
    body.write_bytes(os.urandom(200_000))  # up to ~170 full-size datagrams a request
    url, host = f"https://127.0.0.1:{relay.port}/", f"127.0.0.1:{server.port}"
    on = _upload_run(url, host, "1", body, tmp_path)
    relay.settle()
    relayed_on = relay.to_server
    assert on["quic"]["kernel_drops"]["in_errors"] == 0, "the relay fell behind: not a count"
    off = _upload_run(url, host, "0", body, tmp_path)
    relay.settle()
    lines = server.settled_log(20)
    assert len(lines) == 20 and {line["request"]["method"] for line in lines} == {"POST"}
    for d in (on, off):
        assert d["responses"] == 10 and d["status_codes"] == {"200": 10}, d["first_error"]
        # caddy's `respond` answers without reading the body (then STOP_SENDING): only part
        # of each body leaves, but more than a few datagrams of it
        assert d["quic"]["datagrams_sent"] > 10 * 20
    # The relay (a plain socket: the kernel cuts a GSO batch into its datagrams) saw every
    # datagram counted, and the one CONNECTION_CLOSE after the last response.
    assert relayed_on == on["quic"]["datagrams_sent"] + 1
    assert relay.to_server - relayed_on == off["quic"]["datagrams_sent"] + 1
    assert off["quic"]["send_calls"] == off["quic"]["datagrams_sent"]
    # GSO on: the body's full-size datagrams left in batches (fewer sends than datagrams)
    assert on["quic"]["send_calls"] < on["quic"]["datagrams_sent"]
