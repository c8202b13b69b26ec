"""HTTP/3 in the reference server (issue 33, server side): `loadbench-server --tls --h3`, answered
by a client no one here wrote - aioquic's HTTP/3 stack - on every route, by `loadbench run --h3`
with exact counts on both sides, and through its limits and its graceful stop (GOAWAY, then
CONNECTION_CLOSE H3_NO_ERROR). Skips cleanly when the build has no HTTP/3 (ngtcp2 + nghttp3).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import signal
import ssl
import subprocess
import sys
import time
from typing import Iterator, Optional

import pytest
from cli_runner import loadbench_cli

from loadbench.core import _core
from loadbench.core.paths import server_binary
from loadbench.core.server import ServerProcess
from loadbench.sweep.targets import free_udp_tcp_port

aioquic = pytest.importorskip("aioquic")
from aioquic.asyncio import connect  # noqa: E402
from aioquic.asyncio.protocol import QuicConnectionProtocol  # noqa: E402
from aioquic.h3.connection import H3_ALPN, H3Connection  # noqa: E402
from aioquic.h3.events import DataReceived, HeadersReceived  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from aioquic.quic.events import ConnectionTerminated, StreamDataReceived, StreamReset  # noqa: E402
from aioquic.tls import SessionTicket  # noqa: E402

pytestmark = pytest.mark.skipif(
    not _core.http3_available(),
    reason="this build has no HTTP/3: apt-get install libngtcp2-dev libngtcp2-crypto-gnutls-dev "
    "libnghttp3-dev libgnutls28-dev, then rebuild",
)

H3_NO_ERROR = 0x100
# CRYPTO_ERROR for the TLS alert no_application_protocol (120): 0x100 + 120 (RFC 9001 4.8).
NO_APPLICATION_PROTOCOL = 0x100 + 120
GOAWAY_FRAME = 0x07
SERVER_CONTROL_STREAM = 3  # the server's first unidirectional stream (RFC 9000 2.1)


def free_port() -> int:
    """A port free for TCP and UDP both (the server's TLS port and HTTP/3 share the number)."""
    return free_udp_tcp_port()


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    with ServerProcess(tls=True, tls_port=free_port(), h3=True, cgroup=False) as s:
        yield s


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    """A QUIC variable-length integer (RFC 9000 16) at `at`: (value, next offset)."""
    first = data[at]
    size = 1 << (first >> 6)
    value = first & 0x3F
    for b in data[at + 1 : at + size]:
        value = (value << 8) | b
    return value, at + size


def goaway_ids(control: bytes) -> list[int]:
    """The stream ids of the GOAWAY frames on the server's control stream (aioquic reads GOAWAY
    but reports no event for it, so the frames are read here from the stream's bytes)."""
    if not control:
        return []
    stream_type, at = read_varint(control, 0)
    assert stream_type == 0x00  # a control stream
    ids = []
    while at < len(control):
        frame_type, at = read_varint(control, at)
        length, at = read_varint(control, at)
        payload = control[at : at + length]
        if len(payload) < length:
            break  # the rest has not arrived
        at += length
        if frame_type == GOAWAY_FRAME:
            ids.append(read_varint(payload, 0)[0])
    return ids


class Response:
    def __init__(self) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = b""

    def header(self, name: bytes) -> Optional[bytes]:
        return next((v for k, v in self.headers if k == name), None)

    @property
    def status(self) -> int:
        return int(self.header(b":status") or 0)


class H3Client(QuicConnectionProtocol):
    """aioquic's HTTP/3 connection driven the way its examples/http3_client.py does."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.waiting: dict[int, asyncio.Future] = {}
        self.responses: dict[int, Response] = {}
        self.control = b""
        self.terminated: Optional[ConnectionTerminated] = None
        self.closed = asyncio.get_event_loop().create_future()
        self.resets: dict[int, asyncio.Future] = {}

    def quic_event_received(self, event) -> None:
        if isinstance(event, StreamDataReceived) and event.stream_id == SERVER_CONTROL_STREAM:
            self.control += event.data
        if isinstance(event, StreamReset) and event.stream_id in self.resets:
            self.resets[event.stream_id].set_result(event.error_code)
        if isinstance(event, ConnectionTerminated):
            self.terminated = event
            if not self.closed.done():
                self.closed.set_result(event)
        for e in self.h3.handle_event(event):
            if isinstance(e, (HeadersReceived, DataReceived)):
                r = self.responses.setdefault(e.stream_id, Response())
                if isinstance(e, HeadersReceived):
                    r.headers = list(e.headers)
                else:
                    r.body += e.data
                if e.stream_ended and e.stream_id in self.waiting:
                    self.waiting.pop(e.stream_id).set_result(r)

    def send(self, method: str, path: str, body: bytes = b"") -> asyncio.Future:
        stream_id = self._quic.get_next_available_stream_id()
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", b"localhost"),
            (b":path", path.encode()),
            (b"user-agent", b"aioquic"),
        ]
        if body:
            headers.append((b"content-length", str(len(body)).encode()))
        self.h3.send_headers(stream_id, headers, end_stream=not body)
        if body:
            self.h3.send_data(stream_id, body, end_stream=True)
        future = asyncio.get_event_loop().create_future()
        self.waiting[stream_id] = future
        self.transmit()
        return future

    async def request(self, method: str, path: str, body: bytes = b"") -> Response:
        return await asyncio.wait_for(self.send(method, path, body), 20)


def client_config(alpn: Optional[list[str]] = None) -> QuicConfiguration:
    return QuicConfiguration(
        is_client=True,
        alpn_protocols=alpn or H3_ALPN,
        verify_mode=ssl.CERT_NONE,
        server_name="localhost",
        max_stream_data=4 << 20,
        max_data=16 << 20,
    )


def test_every_route_over_h3_answered_as_over_h1(server: ServerProcess) -> None:
    upload = bytes(range(256)) * 4096  # 1 MiB, the server's default body limit
    cases = [
        ("GET", "/", b"", 200, b"Hello, World!\n", b"text/plain"),
        ("GET", "/plaintext", b"", 200, b"Hello, World!\n", b"text/plain"),
        ("GET", "/json", b"", 200, b'{"message":"Hello, World!"}', b"application/json"),
        ("POST", "/echo", upload, 200, upload, b"application/octet-stream"),
        ("GET", "/delay?ms=30", b"", 200, b"Hello, World!\n", b"text/plain"),
        ("GET", "/nowhere", b"", 404, b"Not Found\n", b"text/plain"),
        ("POST", "/json", b"x", 405, b"Method Not Allowed\n", b"text/plain"),
        ("GET", "/echo", b"", 405, b"Method Not Allowed\n", b"text/plain"),
        ("GET", "/delay?ms=soon", b"", 400, b"Bad Request\n", b"text/plain"),
        ("POST", "/echo", upload + b"!", 413, b"Payload Too Large\n", b"text/plain"),
    ]
    # (HEAD is left out: aioquic 1.x checks content-length against the DATA of every response,
    # HEAD's too, and ends the connection with H3_MESSAGE_ERROR - a client limitation.)

    async def main() -> list[Response]:
        async with connect(
            "127.0.0.1",
            server.https_port,
            configuration=client_config(),
            create_protocol=H3Client,
        ) as client:
            return [await client.request(m, p, b) for m, p, b, *_ in cases]

    responses = asyncio.run(main())
    for (method, path, _, status, body, content_type), r in zip(cases, responses):
        assert r.status == status, (method, path, r.headers)
        assert r.body == body, (method, path, len(r.body))
        assert r.header(b"content-type") == content_type
        assert r.header(b"content-length") == str(len(body)).encode()
        assert r.header(b"server") == b"loadbench"
        assert r.header(b"date") is not None
    assert responses[6].header(b"allow") == b"GET, HEAD"
    assert responses[7].header(b"allow") == b"POST"

    stopped = server.stop()
    assert stopped["requests"]["plaintext"] == 2 and stopped["requests"]["json"] == 1
    assert stopped["requests"]["echo"] == 1 and stopped["requests"]["delay"] == 1
    assert stopped["requests"]["not_found"] == 1
    assert stopped["requests"]["method_not_allowed"] == 2
    assert stopped["requests"]["bad_request"] == 1 and stopped["requests"]["body_too_large"] == 1
    assert stopped["h3"]["requests"] == len(cases) == stopped["requests_total"]
    assert stopped["h3"]["connections"] == 1 and stopped["h3"]["handshakes"] == 1
    assert stopped["h1"] == {"connections": 0, "requests": 0}


def test_loadbench_run_h3_exact_count_on_both_sides(server: ServerProcess, tmp_path) -> None:
    n = 300
    out = tmp_path / "r.json"
    done = loadbench_cli(
        "run", server.url("/", https=True), "--h3", "-n", str(n), "-c", "2", "--json", str(out)
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["responses"] == n and result["config"]["protocol"] == "h3"
    stopped = server.stop()
    assert stopped["h3"]["requests"] == n == stopped["requests"]["plaintext"]
    assert stopped["h3"]["connections"] == 2 == stopped["h3"]["handshakes"]
    assert stopped["requests_total"] == n


def test_wrong_alpn_is_a_clear_handshake_failure(server: ServerProcess) -> None:
    async def main() -> Optional[ConnectionTerminated]:
        protocols: list[H3Client] = []

        def create(*args, **kwargs) -> H3Client:
            protocols.append(H3Client(*args, **kwargs))
            return protocols[-1]

        with pytest.raises(ConnectionError):
            async with connect(
                "127.0.0.1",
                server.https_port,
                configuration=client_config(["hq-interop"]),
                create_protocol=create,
            ):
                pass
        return protocols[0].terminated

    terminated = asyncio.run(main())
    assert terminated is not None
    assert terminated.error_code == NO_APPLICATION_PROTOCOL, terminated
    stopped = server.stop()
    assert stopped["h3"]["connections"] == 1 and stopped["h3"]["handshakes"] == 0
    assert stopped["requests_total"] == 0


def test_alt_svc_on_tcp_responses_names_the_h3_port(server: ServerProcess) -> None:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    connection = http.client.HTTPSConnection("127.0.0.1", server.https_port, context=context)
    try:
        for path in ("/", "/json", "/nowhere"):
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            assert response.getheader("Alt-Svc") == f'h3=":{server.https_port}"'
    finally:
        connection.close()


def test_no_alt_svc_without_h3() -> None:
    with ServerProcess(tls=True, cgroup=False) as s:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        connection = http.client.HTTPSConnection("127.0.0.1", s.https_port, context=context)
        try:
            connection.request("GET", "/")
            response = connection.getresponse()
            response.read()
            assert response.getheader("Alt-Svc") is None
        finally:
            connection.close()


def test_graceful_stop_sends_goaway_finishes_the_stream_then_closes(
    server: ServerProcess,
) -> None:
    async def main() -> tuple[Response, ConnectionTerminated, bytes]:
        async with connect(
            "127.0.0.1",
            server.https_port,
            configuration=client_config(),
            create_protocol=H3Client,
        ) as client:
            assert (await client.request("GET", "/")).status == 200
            in_flight = client.send("GET", "/delay?ms=600")
            await asyncio.sleep(0.2)  # the request reached the server
            server.proc.send_signal(signal.SIGTERM)
            response = await asyncio.wait_for(in_flight, 10)
            terminated = await asyncio.wait_for(client.closed, 10)
            return response, terminated, client.control

    response, terminated, control = asyncio.run(main())
    assert response.status == 200 and response.body == b"Hello, World!\n"
    assert terminated.error_code == H3_NO_ERROR, terminated
    ids = goaway_ids(control)
    # The shutdown notice (the largest id, RFC 9114 5.2), then the first id not processed: 8,
    # since the client's streams 0 and 4 (the /delay one) were.
    assert len(ids) == 2 and ids[0] >= ids[1] == 8, ids
    stopped = server.stop()
    assert stopped["h3"]["goaways"] == 1 and stopped["h3"]["requests"] == 2
    assert stopped["requests"]["delay"] == 1


def test_h3_needs_tls_one_clear_error() -> None:
    done = subprocess.run(
        [str(server_binary()), "--h3"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert "--h3 serves HTTP/3 on the TLS port's number over UDP: it needs --tls" in done.stderr
    served = loadbench_cli("serve", "--h3")
    assert served.returncode != 0 and "needs --tls" in served.stderr


def test_help_tells_what_h3_does() -> None:
    done = subprocess.run(
        [str(server_binary()), "--help"], capture_output=True, text=True, timeout=30
    )
    assert "--h3" in done.stdout and "Alt-Svc" in done.stdout


def test_stream_limit_grants_a_stream_as_each_closes(tmp_path) -> None:
    # --h2-max-streams is QUIC's initial_max_streams_bidi: with 2 allowed and 8 wanted per
    # connection, every request still completes (MAX_STREAMS as streams close), none refused.
    n = 400
    with ServerProcess(
        tls=True, tls_port=free_port(), h3=True, h2_max_streams=2, workers=2, cgroup=False
    ) as s:
        out = tmp_path / "r.json"
        done = loadbench_cli(
            "run",
            s.url("/json", https=True),
            "--h3",
            "-n",
            str(n),
            "-c",
            "3",
            "-p",
            "8",
            "--json",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(out.read_text())
        assert result["responses"] == n and not any(result["errors"].values()), result["errors"]
        stopped = s.stop()
    assert stopped["h3"]["requests"] == n == stopped["requests"]["json"]
    assert stopped["h3"]["connections"] == 3


def test_concurrent_one_mib_echoes_come_back_byte_exact(server: ServerProcess) -> None:
    # Several connections, several 1 MiB uploads in flight on each: the server's sends outrun
    # the UDP socket's buffer, and whatever it could not send goes out once it can.
    bodies = [bytes([i]) * (1 << 20) for i in range(3)]

    async def one_connection() -> list[Response]:
        async with connect(
            "127.0.0.1",
            server.https_port,
            configuration=client_config(),
            create_protocol=H3Client,
        ) as client:
            futures = [client.send("POST", "/echo", body) for body in bodies]
            return list(await asyncio.wait_for(asyncio.gather(*futures), 60))

    async def main() -> list[list[Response]]:
        return list(await asyncio.gather(*(one_connection() for _ in range(3))))

    for responses in asyncio.run(main()):
        assert [r.status for r in responses] == [200] * len(bodies)
        assert [r.body == body for r, body in zip(responses, bodies)] == [True] * len(bodies)
    stopped = server.stop()
    assert stopped["requests"]["echo"] == 9 == stopped["h3"]["requests"]


def test_serve_h3_says_where_and_counts_http3_at_exit() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "loadbench", "serve", "--tls", "--h3"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        while not any("HTTP/3 on UDP port" in line for line in lines):
            line = proc.stdout.readline()
            assert line, "\n".join(lines)
            lines.append(line)
        port = int(lines[-1].split("UDP port ")[1].split()[0])
        done = loadbench_cli("run", f"https://127.0.0.1:{port}/json", "--h3", "-n", "25", "-c", "1")
        assert done.returncode == 0, done.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert "HTTP/3: 25 requests on 1 connections" in out, out
    assert "(1 handshakes, 0 resumed, 0 with 0-RTT accepted)" in out, out


def test_late_request_headers_reset_the_stream_not_the_connection() -> None:
    H3_REQUEST_INCOMPLETE = 0x10D

    async def main(port: int) -> tuple[int, Response]:
        async with connect(
            "127.0.0.1", port, configuration=client_config(), create_protocol=H3Client
        ) as client:
            stream_id = client._quic.get_next_available_stream_id()
            reset = asyncio.get_event_loop().create_future()
            client.resets[stream_id] = reset
            # A HEADERS frame (type 1) announcing 16 bytes, and none of them: slowloris.
            client._quic.send_stream_data(stream_id, b"\x01\x10")
            client.transmit()
            code = await asyncio.wait_for(reset, 20)
            return code, await client.request("GET", "/json")

    with ServerProcess(
        tls=True, tls_port=free_port(), h3=True, header_timeout_ms=300, cgroup=False
    ) as s:
        code, after = asyncio.run(main(s.https_port))
        assert code == H3_REQUEST_INCOMPLETE
        assert after.status == 200  # the same connection goes on
        stopped = s.stop()
    assert stopped["h3"]["connections"] == 1 and stopped["h3"]["requests"] == 1


def test_idle_connections_close_each_at_its_own_idle_timeout() -> None:
    # Three connections, opened 0.5 s apart and then left idle, against a 2 s idle timeout: each
    # is closed by the server's own timer (QUIC's idle close is silent: no client sends anything
    # more). A worker's connection timers are one heap behind one Asio timer: the three entries
    # surface in turn, so the open count steps down, not all at once with the last.
    idle_s = 2.0

    async def main(server: _core.Server) -> tuple[list[int], list[int]]:
        config = client_config()
        config.idle_timeout = 60.0  # the server's 2 s is the smaller, so it governs both sides
        opened: list[int] = []
        async with contextlib.AsyncExitStack() as stack:
            for i in range(3):
                if i:
                    await asyncio.sleep(0.5)
                client = await stack.enter_async_context(
                    connect(
                        "127.0.0.1",
                        server.https_port,
                        configuration=config,
                        create_protocol=H3Client,
                    )
                )
                assert (await client.request("GET", "/json")).status == 200
                opened.append(server.counters()["connections_open"])
            seen = [server.counters()["connections_open"]]
            deadline = time.monotonic() + 5 * idle_s
            while seen[-1] > 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
                now_open = server.counters()["connections_open"]
                if now_open != seen[-1]:
                    seen.append(now_open)
            return opened, seen

    with _core.Server(
        http=False, tls=True, tls_port=free_port(), h3=True, idle_timeout_ms=int(idle_s * 1000)
    ) as server:
        opened, seen = asyncio.run(main(server))
        assert opened == [1, 2, 3], opened
        assert seen[0] == 3 and seen[-1] == 0, f"not all closed within {5 * idle_s} s: {seen}"
        assert seen == sorted(seen, reverse=True) and len(seen) > 2, seen
        c = server.counters()
    assert c["h3"]["connections"] == 3 and c["h3"]["requests"] == 3, c


def resume_twice(port: int, early: bool) -> tuple[list[Response], Optional[bool]]:
    """aioquic, twice: the first connection takes the server's session ticket, the second resumes
    with it - and with `early` sends its request before the handshake completes, as 0-RTT when
    the ticket allows it. The responses, and whether aioquic saw its early data accepted."""
    tickets: list[SessionTicket] = []

    async def main() -> tuple[list[Response], Optional[bool]]:
        responses, accepted = [], None
        for resuming in (False, True):
            config = client_config()
            if resuming:
                assert tickets, "the server sent no session ticket"
                config.session_ticket = tickets[-1]
            async with connect(
                "127.0.0.1",
                port,
                configuration=config,
                create_protocol=H3Client,
                session_ticket_handler=tickets.append,
                wait_connected=not (resuming and early),
            ) as client:
                responses.append(await client.request("GET", "/json"))
                if resuming:
                    accepted = client._quic.tls.early_data_accepted
        return responses, accepted

    return asyncio.run(main())


def test_aioquic_resumes_with_the_servers_session_ticket(server: ServerProcess) -> None:
    responses, accepted = resume_twice(server.https_port, early=False)
    assert [(r.status, r.body) for r in responses] == [(200, b'{"message":"Hello, World!"}')] * 2
    assert accepted is False
    stopped = server.stop()
    assert stopped["h3"]["handshakes"] == 2 and stopped["h3"]["resumed"] == 1
    assert stopped["h3"]["zero_rtt"] == 0


def test_aioquic_0rtt_request_answered_by_a_server_taking_early_data() -> None:
    with ServerProcess(
        tls=True, tls_port=free_port(), h3=True, h3_0rtt=True, cgroup=False
    ) as server:
        responses, accepted = resume_twice(server.https_port, early=True)
        stopped = server.stop()
    assert [(r.status, r.body) for r in responses] == [(200, b'{"message":"Hello, World!"}')] * 2
    assert accepted is True
    assert stopped["h3"]["handshakes"] == 2 and stopped["h3"]["resumed"] == 1
    assert stopped["h3"]["zero_rtt"] == 1 and stopped["requests"]["json"] == 2


def test_a_request_the_client_resets_midway_is_reset_by_the_server_too() -> None:
    # RFC 9114 4.1.2: a request stream that ends without a whole request gets its response side
    # aborted (H3_REQUEST_INCOMPLETE). The client resets only its sending side (RESET_STREAM, no
    # STOP_SENDING) halfway through a body; before, the server's side stayed open - and the
    # client's one stream (--h2-max-streams 1) taken - until the connection ended. Found by
    # server_h3_fuzz.
    H3_REQUEST_CANCELLED = 0x10C
    H3_REQUEST_INCOMPLETE = 0x10D

    async def main(port: int) -> tuple[int, Response]:
        async with connect(
            "127.0.0.1", port, configuration=client_config(), create_protocol=H3Client
        ) as client:
            stream_id = client._quic.get_next_available_stream_id()
            reset = asyncio.get_event_loop().create_future()
            client.resets[stream_id] = reset
            headers = [
                (b":method", b"POST"),
                (b":scheme", b"https"),
                (b":authority", b"localhost"),
                (b":path", b"/echo"),
                (b"content-length", b"10"),
            ]
            client.h3.send_headers(stream_id, headers)
            client.h3.send_data(stream_id, b"half", end_stream=False)
            client.transmit()
            client._quic.reset_stream(stream_id, H3_REQUEST_CANCELLED)
            client.transmit()
            code = await asyncio.wait_for(reset, 20)
            # The stream has closed on both ends: the client's one stream is granted again.
            return code, await client.request("GET", "/json")

    with ServerProcess(
        tls=True, tls_port=free_port(), h3=True, h2_max_streams=1, cgroup=False
    ) as s:
        code, after = asyncio.run(main(s.https_port))
        assert code == H3_REQUEST_INCOMPLETE
        assert after.status == 200
        stopped = s.stop()
    assert stopped["h3"]["requests"] == 1 == stopped["requests"]["json"]
    assert stopped["h3"]["connections"] == 1


def test_a_trailer_section_that_never_decodes_is_bounded_by_the_header_timeout() -> None:
    # Trailers are a header section too: a client's trailer HEADERS that references a QPACK
    # dynamic table entry it never inserts stays blocked (RFC 9204 2.1.2), with the stream's FIN
    # behind it. Before, only the request's own header section had a deadline, so such a stream
    # stayed open until the connection ended; now it is reset like late headers. Found by
    # server_h3_fuzz.
    H3_REQUEST_INCOMPLETE = 0x10D
    # HEADERS (type 1, 3 bytes): Required Insert Count 1 (encoded 2, the server's table holding
    # 128 entries), Base 1, then the dynamic entry 0 - never inserted.
    blocked_trailers = b"\x01\x03\x02\x00\x80"

    async def main(port: int) -> tuple[int, Response]:
        async with connect(
            "127.0.0.1", port, configuration=client_config(), create_protocol=H3Client
        ) as client:
            stream_id = client._quic.get_next_available_stream_id()
            reset = asyncio.get_event_loop().create_future()
            client.resets[stream_id] = reset
            headers = [
                (b":method", b"POST"),
                (b":scheme", b"https"),
                (b":authority", b"localhost"),
                (b":path", b"/echo"),
            ]
            client.h3.send_headers(stream_id, headers)
            client.h3.send_data(stream_id, b"body", end_stream=False)
            client._quic.send_stream_data(stream_id, blocked_trailers, end_stream=True)
            client.transmit()
            code = await asyncio.wait_for(reset, 20)
            return code, await client.request("GET", "/json")

    with ServerProcess(
        tls=True, tls_port=free_port(), h3=True, header_timeout_ms=300, cgroup=False
    ) as s:
        code, after = asyncio.run(main(s.https_port))
        assert code == H3_REQUEST_INCOMPLETE
        assert after.status == 200  # the same connection goes on
        stopped = s.stop()
    assert stopped["h3"]["requests"] == 1 == stopped["requests"]["json"]
