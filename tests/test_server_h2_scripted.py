"""HTTP/2 limits and lifecycle of the native server, driven by a scripted client (h2 package):
streams beyond SETTINGS_MAX_CONCURRENT_STREAMS refused, --h2-max-requests, header list and
body limits, GOAWAY on graceful shutdown with open streams finishing, a malformed frame, a
slow header block, idle connections and a client that never reads."""

from __future__ import annotations

import signal
import socket
import struct
import time

import pytest
from conformance import frame
from h2_client import H2Client

from loadbench import ServerProcess

REFUSED_STREAM = 0x7
PROTOCOL_ERROR = 0x1
NO_ERROR = 0x0


def test_streams_beyond_the_limit_are_refused_before_and_after_settings_ack(server_factory) -> None:
    server = server_factory(h2_max_streams=4)
    # Before the client saw our SETTINGS: 7 streams at once, 4 are served, 3 refused.
    c = H2Client(server.http_port)
    sids = [c.request("/delay?ms=200") for _ in range(7)]
    c.read_until(lambda: all(c.finished(s) for s in sids))
    served = [s for s in sids if c.streams[s].status == 200]
    refused = [s for s in sids if c.streams[s].reset == REFUSED_STREAM]
    assert len(served) == 4 and len(refused) == 3, c.streams
    assert c.remote_settings[0x3] == 4
    # After the ACK (nghttp2 alone would answer with GOAWAY PROTOCOL_ERROR): still a stream error.
    c.ignore_stream_limit()
    more = [c.request("/delay?ms=200") for _ in range(6)]
    c.read_until(lambda: all(c.finished(s) for s in more))
    assert sum(c.streams[s].status == 200 for s in more) == 4
    assert sum(c.streams[s].reset == REFUSED_STREAM for s in more) == 2
    assert c.goaway is None and not c.closed
    c.close()
    stopped = server.stop()
    assert stopped["h2"]["streams_refused"] == 5 and stopped["requests"]["delay"] == 8, stopped


def test_streams_the_client_resets_are_counted(server_factory) -> None:
    server = server_factory()
    c = H2Client(server.http_port)
    sids = [c.request("/delay?ms=300") for _ in range(5)]
    for sid in sids[:3]:  # the client gives up on three of them (a cancelled request)
        c.conn.reset_stream(sid)
    c.flush()
    c.read_until(lambda: all(c.finished(s) for s in sids[3:]))
    assert [c.streams[s].status for s in sids[3:]] == [200, 200]
    c.close()
    stopped = server.stop()
    assert stopped["h2"]["resets_received"] == 3 and stopped["h2"]["streams"] == 5, stopped


def test_h2_max_requests_sends_goaway_after_n_streams(server_factory) -> None:
    server = server_factory(h2_max_requests=3)
    c = H2Client(server.http_port)
    sids = [c.request("/plaintext") for _ in range(3)]
    c.read_until(lambda: all(c.finished(s) for s in sids) and c.goaway is not None)
    assert all(c.streams[s].body == b"Hello, World!\n" for s in sids)
    assert c.goaway is not None and c.goaway.error_code == NO_ERROR
    assert c.goaway.last_stream_id == sids[-1]
    assert c.read_until_closed(5.0)  # the server closes once the last stream is answered
    stopped = server.stop()
    assert stopped["h2"]["goaways"] == 1 and stopped["h2"]["requests"] == 3, stopped


def test_header_list_over_the_limit_is_431_and_body_over_max_body_is_413(server_factory) -> None:
    server = server_factory(max_body=1000)
    c = H2Client(server.http_port)
    big = c.request("/plaintext", headers=[("x-big", "a" * 9000)])
    early = c.request(
        "/echo", "POST", headers=[("content-length", "5000")], end=False
    )  # 413 before any DATA
    late = c.request(
        "/echo", "POST", body=b"b" * 1500
    )  # no content-length: 413 once DATA passes the limit
    ok = c.request("/echo", "POST", body=b"c" * 900, headers=[("content-type", "text/x-ok")])
    c.read_until(
        lambda: (
            all(c.streams[s].status is not None for s in (big, early, late, ok)) and c.finished(ok)
        )
    )
    assert c.streams[big].status == 431
    assert c.streams[early].status == 413 and c.streams[late].status == 413
    assert c.streams[ok].status == 200 and c.streams[ok].body == b"c" * 900
    assert c.streams[ok].headers["content-type"] == "text/x-ok"
    c.close()
    stopped = server.stop()
    assert (
        stopped["requests"]["header_too_large"] == 1 and stopped["requests"]["body_too_large"] == 2
    )


def test_graceful_shutdown_sends_goaway_and_open_streams_finish(server_factory) -> None:
    server = server_factory()
    c = H2Client(server.http_port)
    sids = [c.request("/delay?ms=600") for _ in range(3)]
    c.read_until(lambda: bool(c.remote_settings), 2.0)
    time.sleep(0.1)  # the three streams have begun on the server
    t0 = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    c.read_until(lambda: c.goaway is not None, 2.0)
    assert c.goaway is not None and c.goaway.error_code == NO_ERROR
    assert c.goaway.last_stream_id >= sids[-1]
    assert time.monotonic() - t0 < 0.4  # the GOAWAY came at once, not after the streams
    c.read_until(lambda: all(c.finished(s) for s in sids), 5.0)
    for s in sids:
        assert c.streams[s].status == 200 and c.streams[s].body == b"Hello, World!\n"
    assert c.read_until_closed(5.0)
    stopped = server.stop()
    assert server.proc.returncode == 0
    assert stopped["requests"]["delay"] == 3 and stopped["h2"]["goaways"] >= 1, stopped


def test_malformed_frame_gets_goaway_protocol_error_and_close(server_factory) -> None:
    server = server_factory()
    c = H2Client(server.http_port)
    sid = c.request("/plaintext")
    c.read_until(lambda: c.finished(sid))
    c.send_raw(frame(0x0, 0x0, 0, b"x"))  # DATA on stream 0: a connection error (RFC 9113 6.1)
    c.read_until(lambda: c.goaway is not None, 5.0)
    assert c.goaway is not None and c.goaway.error_code == PROTOCOL_ERROR
    assert c.read_until_closed(5.0)
    # The server goes on serving others.
    other = H2Client(server.http_port)
    s2 = other.request("/json")
    other.read_until(lambda: other.finished(s2))
    assert other.streams[s2].status == 200
    other.close()


def test_garbage_after_the_preface_is_a_protocol_error(server_factory) -> None:
    server = server_factory()
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=5) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"GET / HTTP/1.1\r\n\r\n")
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    # SETTINGS first, then GOAWAY (type 7) with PROTOCOL_ERROR, then the server closed.
    assert data[3] == 0x4
    goaway = data.find(b"\x07\x00\x00\x00\x00\x00", 9)
    assert (
        goaway > 0 and struct.unpack(">I", data[goaway + 10 : goaway + 14])[0] == PROTOCOL_ERROR
    ), data


def test_header_block_that_never_ends_hits_the_header_timeout(server_factory) -> None:
    server = server_factory(header_timeout_ms=300, idle_timeout_ms=60_000)
    c = H2Client(server.http_port)
    c.read_until(lambda: bool(c.remote_settings), 2.0)
    # HEADERS without END_HEADERS, and no CONTINUATION: the block never completes.
    c.send_raw(frame(0x1, 0x0, 1, b"\x82"))  # :method GET (static table index 2)
    t0 = time.monotonic()
    assert c.read_until_closed(5.0)
    assert 0.25 < time.monotonic() - t0 < 2.0


def test_idle_h2_connection_is_closed_after_the_idle_timeout(server_factory) -> None:
    server = server_factory(idle_timeout_ms=300)
    c = H2Client(server.http_port)
    sid = c.request("/plaintext")
    c.read_until(lambda: c.finished(sid))
    t0 = time.monotonic()
    assert c.read_until_closed(5.0)
    assert 0.25 < time.monotonic() - t0 < 2.0


def test_delay_streams_run_concurrently(server_factory) -> None:
    server = server_factory()
    c = H2Client(server.http_port)
    t0 = time.monotonic()
    slow = c.request("/delay?ms=500")
    fast = [c.request(f"/delay?ms={ms}") for ms in (50, 100, 0)]
    plain = c.request("/plaintext")
    c.read_until(lambda: all(c.finished(s) for s in fast + [plain]))
    assert time.monotonic() - t0 < 0.45 and not c.finished(slow)  # the others did not wait for it
    c.read_until(lambda: c.finished(slow))
    assert c.streams[slow].status == 200 and time.monotonic() - t0 >= 0.5
    c.close()


def vm_kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {key}")


def test_client_that_never_reads_does_not_make_the_server_buffer_without_bound(
    server_factory,
) -> None:
    """Huge flow-control windows (nothing holds the server back but TCP), a tiny receive buffer,
    and a stream of 13-byte requests for / sent as fast as the socket takes them, never reading:
    each answer is ~3x its request, so only TCP backpressure, the stream limit and nghttp2's
    flood guard (refusals that cannot be sent pile up) hold the server back."""
    server: ServerProcess = server_factory(idle_timeout_ms=3000)
    before = vm_kib(server.pid, "VmRSS")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(5.0)
    sock.connect(("127.0.0.1", server.http_port))
    settings = frame(0x4, 0, 0, struct.pack(">HI", 0x4, 2**31 - 1))  # INITIAL_WINDOW_SIZE
    window = frame(0x8, 0, 0, struct.pack(">I", 2**31 - 1 - 65535))
    sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + settings + window)
    # :method GET, :path /, :scheme http (static table), :authority: a literal the first time
    # (indexed as dynamic entry 62), then that index: every later request is 13 bytes.
    first = b"\x82\x84\x86\x41\x09127.0.0.1"
    get_root = b"\x82\x84\x86\xbe"
    sock.sendall(frame(0x1, 0x5, 1, first))
    sent = 1
    deadline = time.monotonic() + 8.0
    stream = 3
    try:
        while time.monotonic() < deadline and stream < 2**31 - 2000:
            batch = b"".join(frame(0x1, 0x5, stream + 2 * i, get_root) for i in range(1000))
            sock.sendall(batch)
            stream += 2000
            sent += 1000
    except OSError:
        pass  # the server gave up on us (flood guard, idle timeout): allowed
    peak_growth_mib = (vm_kib(server.pid, "VmHWM") - before) / 1024
    assert sent >= 1000
    assert peak_growth_mib < 64, (
        f"server peak RSS grew {peak_growth_mib:.1f} MiB for a client that never reads"
    )
    # The server is still serving everybody else.
    other = H2Client(server.http_port)
    sid = other.request("/plaintext")
    other.read_until(lambda: other.finished(sid), 5.0)
    assert other.streams[sid].status == 200
    other.close()
    sock.close()
    stopped = server.stop()
    # It answered some (the requests were valid) but not everything it was sent.
    assert 0 < stopped["h2"]["requests"] < sent, (sent, stopped)
    assert stopped["requests"]["plaintext"] == stopped["h2"]["requests"], stopped


def test_no_h2_serves_http1_only_and_bad_h2_flags_are_config_errors(server_factory) -> None:
    import loadbench

    server = server_factory(h2=False, tls=True)
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=5) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        data = sock.recv(4096)
    assert data.startswith(b"HTTP/1.1 400 "), data  # the preface is just a bad HTTP/1.1 request
    import ssl

    ctx = ssl._create_unverified_context()
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    with socket.create_connection(("127.0.0.1", server.https_port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.selected_alpn_protocol() == "http/1.1"
    assert server.stop()["h2"]["connections"] == 0
    with pytest.raises(loadbench.ConfigError, match="--h2-max-streams"):
        ServerProcess(h2_max_streams=0).start()
    with pytest.raises(ValueError, match="h2_max_streams"):
        loadbench.InProcessServer(h2_max_streams=0)


def test_in_process_server_counts_h2(server_factory) -> None:
    import loadbench

    with loadbench.InProcessServer(h2_max_streams=10) as server:
        c = H2Client(server.http_port)
        sids = [c.request("/json") for _ in range(3)]
        c.read_until(lambda: all(c.finished(s) for s in sids))
        c.close()
        counters = server.counters()
    assert counters["h2"]["requests"] == 3 and counters["h2"]["streams"] == 3
    assert counters["h1"]["requests"] == 0 and counters["requests"]["json"] == 3


def test_many_partial_uploads_on_one_connection_all_complete(server_factory) -> None:
    """30 echo streams each upload 60 KB, interleaved, none ends until all were sent: the
    connection window must keep moving (a budget that withholds it while every body is still
    partial deadlocks), then every stream echoes its whole body."""
    server = server_factory(max_body=100_000)
    c = H2Client(server.http_port)
    c.read_until(lambda: bool(c.remote_settings), 2.0)
    chunk = b"q" * 15_000
    sids = [c.request("/echo", "POST", end=False) for _ in range(30)]
    sent = dict.fromkeys(sids, 0)
    deadline = time.monotonic() + 10.0
    while any(n < 60_000 for n in sent.values()) and time.monotonic() < deadline:
        for s in sids:
            if sent[s] < 60_000 and c.conn.local_flow_control_window(s) >= len(chunk):
                c.conn.send_data(s, chunk)
                sent[s] += len(chunk)
        c.flush()
        c.read_once(0.05)
    assert all(n == 60_000 for n in sent.values()), f"stalled after {sum(sent.values())} bytes"
    for s in sids:
        c.conn.end_stream(s)
    c.flush()
    c.read_until(lambda: all(c.finished(s) for s in sids), 10.0)
    for s in sids:
        assert c.streams[s].status == 200 and c.streams[s].body == b"q" * 60_000
    late = c.request("/echo", "POST", end=False)
    c.send_body(late, b"r" * 90_000)
    c.read_until(lambda: c.finished(late), 10.0)
    assert c.streams[late].body == b"r" * 90_000
    c.close()
