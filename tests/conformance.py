"""A conformance suite written from the RFC text: HTTP/1.1 (RFC 9112, RFC 9110) and HTTP/2
(RFC 9113). Each case is one requirement: the bytes sent on a new connection, and every
outcome the RFC allows. tests/test_conformance.py asserts our server's outcomes and prints a
table of nginx's and h2o's (where installed) beside them, so a reader can compare.

An outcome is what a client can observe, written as a short string:
  HTTP/1.1  the statuses of the responses read, then "close" (the server closed the
            connection) or "open" (it waited for more), then "+junk" if bytes followed that
            are no response, "+wrong" if the responses break the case's check (content on
            a HEAD, a 405 without Allow): e.g. "400 close", "200 200 open", "200 open +junk".
  HTTP/2    "goaway:CODE" (a GOAWAY, a connection error), "rst:CODE" (RST_STREAM on the
            case's stream, a stream error), "response:STATUS" (a response on it), "close"
            (closed without a GOAWAY), "nothing" (no answer within the wait).
Every socket read is bounded; a case takes at most about a second."""

from __future__ import annotations

import socket
import ssl
import struct
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import hpack

WAIT = 0.6  # how long silence means "waits for more" (loopback answers in well under 1 ms)


# --- HTTP/1.1 ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class H1Case:
    name: str
    rfc: str  # the section that states the requirement
    requirement: str
    raw: bytes
    allowed: tuple[str, ...]
    head: tuple[int, ...] = ()  # indices of responses answering HEAD (no content follows)
    check: Optional[Callable[[list[tuple[int, dict, bytes]]], bool]] = (
        None  # on the parsed responses
    )


def _read_h1(
    sock: socket.socket, head: tuple[int, ...]
) -> tuple[list[tuple[int, dict, bytes]], bool, bool]:
    """Responses until the server closes or is silent for WAIT: (responses, closed, junk)."""
    buf = b""
    closed = False
    deadline = time.monotonic() + 3 * WAIT
    sock.settimeout(WAIT)
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        buf += chunk
    responses: list[tuple[int, dict, bytes]] = []
    while buf:
        end = buf.find(b"\r\n\r\n")
        if not buf.startswith(b"HTTP/1.") or end < 0:
            return responses, closed, True
        lines = buf[:end].decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        buf = buf[end + 4 :]
        length = (
            0
            if len(responses) in head or 100 <= status < 200
            else int(headers.get("content-length", 0))
        )
        responses.append((status, headers, buf[:length]))
        buf = buf[length:]
    return responses, closed, False


def _holds(check: Callable[[list[tuple[int, dict, bytes]]], bool], responses) -> bool:
    try:
        return bool(check(responses))
    except (IndexError, KeyError, ValueError):  # fewer or other responses than it looks at
        return False


def run_h1(port: int, case: H1Case) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.sendall(case.raw)
        except (BrokenPipeError, ConnectionResetError):
            pass
        responses, closed, junk = _read_h1(sock, case.head)
    words = [str(status) for status, _, _ in responses if status >= 200]
    words.append("close" if closed else "open")
    if junk:
        words.append("+junk")
    if case.check is not None and responses and not _holds(case.check, responses):
        words.append("+wrong")  # not what the requirement says (content on a HEAD, no Allow, ...)
    return " ".join(words)


def _req(
    method: str, target: str, *fields: str, body: bytes = b"", version: str = "HTTP/1.1"
) -> bytes:
    return (
        f"{method} {target} {version}\r\n".encode()
        + b"".join(f"{f}\r\n".encode() for f in fields)
        + b"\r\n"
        + body
    )


def _no_content(responses) -> bool:
    return all(body == b"" for _, _, body in responses)


def _head_like_get(responses) -> bool:
    status, headers, body = responses[0]
    return status == 200 and body == b"" and headers.get("content-length") == "14"


def _allow_lists(responses) -> bool:
    return all("allow" in headers for status, headers, _ in responses if status == 405)


H1_CASES: tuple[H1Case, ...] = (
    H1Case(
        "host-missing",
        "9112 §3.2",
        "MUST respond 400 to an HTTP/1.1 request without Host",
        _req("GET", "/plaintext"),
        ("400 close",),
    ),
    H1Case(
        "host-twice",
        "9112 §3.2",
        "MUST respond 400 to a request with more than one Host",
        _req("GET", "/plaintext", "Host: localhost", "Host: localhost"),
        ("400 close",),
    ),
    H1Case(
        "host-userinfo",
        "9112 §3.2",
        "MUST respond 400 to an invalid Host (userinfo)",
        _req("GET", "/plaintext", "Host: user@localhost"),
        ("400 close",),
    ),
    H1Case(
        "host-path",
        "9112 §3.2",
        "MUST respond 400 to an invalid Host (a path)",
        _req("GET", "/plaintext", "Host: localhost/path"),
        ("400 close",),
    ),
    H1Case(
        "host-list",
        "9112 §3.2",
        "MUST respond 400 to an invalid Host (a list)",
        _req("GET", "/plaintext", "Host: a, b"),
        ("400 close",),
    ),
    H1Case(
        "host-http10-optional",
        "9112 §3.2",
        "an HTTP/1.0 request without Host is served",
        _req("GET", "/plaintext", version="HTTP/1.0"),
        ("200 close",),
    ),
    H1Case(
        "te-chunked-not-last",
        "9112 §6.3",
        "chunked not the final coding: MUST respond 400 and close",
        _req("POST", "/echo", "Host: x", "Transfer-Encoding: chunked, gzip", body=b"0\r\n\r\n"),
        ("400 close",),
    ),
    H1Case(
        "te-gzip-alone",
        "9112 §6.3",
        "a request coding that does not end in chunked: MUST respond 400 and close",
        _req("POST", "/echo", "Host: x", "Transfer-Encoding: gzip", body=b"0\r\n\r\n"),
        ("400 close",),
    ),
    H1Case(
        "te-unknown-with-cl",
        "9112 §6.1/6.3",
        "Transfer-Encoding overrides Content-Length; an unknown "
        "coding is never read by Content-Length (TE.CL)",
        _req(
            "POST",
            "/echo",
            "Host: x",
            "Transfer-Encoding: xchunked",
            "Content-Length: 5",
            body=b"hello",
        ),
        ("400 close", "501 close"),
    ),
    H1Case(
        "te-identity-with-cl",
        "9112 §6.1/6.3",
        "identity is no longer a coding: not read by Content-Length",
        _req(
            "POST",
            "/echo",
            "Host: x",
            "Transfer-Encoding: identity",
            "Content-Length: 5",
            body=b"hello",
        ),
        ("400 close", "501 close"),
    ),
    H1Case(
        "te-empty-with-cl",
        "9112 §6.3",
        "an empty Transfer-Encoding: the length cannot be determined",
        _req("POST", "/echo", "Host: x", "Transfer-Encoding:", "Content-Length: 5", body=b"hello"),
        ("400 close", "501 close"),
    ),
    H1Case(
        "te-chunked-twice-cl",
        "9112 §6.1",
        "TE with Content-Length: reject, or read by TE; close either way",
        _req(
            "POST",
            "/echo",
            "Host: x",
            "Transfer-Encoding: chunked, chunked",
            "Content-Length: 5",
            body=b"0\r\n\r\n",
        ),
        ("400 close", "200 close"),
    ),
    H1Case(
        "te-and-cl",
        "9112 §6.1",
        "TE with Content-Length: MAY reject or read by TE, MUST close after",
        _req(
            "POST",
            "/echo",
            "Host: x",
            "Content-Length: 5",
            "Transfer-Encoding: chunked",
            body=b"5\r\nhello\r\n0\r\n\r\n",
        ),
        ("400 close", "200 close"),
    ),
    H1Case(
        "te-unknown-coding",
        "9112 §6.1",
        "a transfer coding the server does not understand: 501 (SHOULD)",
        _req("POST", "/echo", "Host: x", "Transfer-Encoding: gzip, chunked", body=b"0\r\n\r\n"),
        ("501 close", "400 close"),
    ),
    H1Case(
        "te-http10",
        "9112 §6.1",
        "Transfer-Encoding in HTTP/1.0: faulty framing, close",
        _req(
            "POST",
            "/echo",
            "Transfer-Encoding: chunked",
            body=b"5\r\nhello\r\n0\r\n\r\n",
            version="HTTP/1.0",
        ),
        ("400 close",),
    ),
    H1Case(
        "te-chunked-ok",
        "9112 §7.1",
        "a chunked body is read to its last chunk and the connection kept",
        _req(
            "POST",
            "/echo",
            "Host: x",
            "Transfer-Encoding: chunked",
            body=b"5\r\nhello\r\n0\r\n\r\n",
        ),
        ("200 open",),
        check=lambda r: r[0][2] == b"hello",
    ),
    H1Case(
        "head-get-route",
        "9110 §9.1/9.3.2",
        "HEAD MUST be supported; the answer has no content",
        _req("HEAD", "/plaintext", "Host: x"),
        ("200 open",),
        head=(0,),
        check=_head_like_get,
    ),
    H1Case(
        "head-then-get",
        "9110 §9.3.2",
        "after a HEAD answer the next response starts at once (no content)",
        _req("HEAD", "/json", "Host: x") + _req("GET", "/plaintext", "Host: x"),
        ("200 200 open",),
        head=(0,),
        check=lambda r: r[1][2] == b"Hello, World!\n",
    ),
    H1Case(
        "head-error-no-content",
        "9110 §9.3.2",
        "every response to HEAD has no content (405 too)",
        _req("HEAD", "/echo", "Host: x") + _req("GET", "/plaintext", "Host: x"),
        ("405 200 open", "405 close"),
        head=(0,),
    ),
    H1Case(
        "405-allow",
        "9110 §15.5.6",
        "a 405 MUST carry Allow",
        _req("POST", "/plaintext", "Host: x", "Content-Length: 0"),
        ("405 open", "405 close"),
        check=_allow_lists,
    ),
    H1Case(
        "absolute-form",
        "9112 §3.2.2",
        "a server MUST accept the absolute-form",
        _req("GET", "http://localhost/plaintext", "Host: localhost"),
        ("200 open",),
    ),
    H1Case(
        "absolute-form-userinfo",
        "9110 §4.2.4",
        "userinfo in an http URI is an error",
        _req("GET", "http://user@localhost/plaintext", "Host: localhost"),
        ("400 close",),
    ),
    H1Case(
        "space-before-colon",
        "9112 §5.1",
        "whitespace between field name and colon: MUST reject with 400",
        _req("GET", "/plaintext", "Host: x", "X-A : b"),
        ("400 close",),
    ),
    H1Case(
        "bad-content-length",
        "9112 §6.3",
        "an invalid Content-Length: 400 and close",
        _req("POST", "/echo", "Host: x", "Content-Length: 5x", body=b"hello"),
        ("400 close",),
    ),
    H1Case(
        "cl-differing-list",
        "9112 §6.3",
        "Content-Length with differing values: 400 and close",
        _req("POST", "/echo", "Host: x", "Content-Length: 5, 6", body=b"hello"),
        ("400 close",),
    ),
    H1Case(
        "keep-alive-pipelined",
        "9112 §9.3",
        "pipelined requests are answered in order, connection kept",
        _req("GET", "/plaintext", "Host: x") * 3,
        ("200 200 200 open",),
    ),
    H1Case(
        "connection-close",
        "9112 §9.6",
        "Connection: close: the server closes after the response",
        _req("GET", "/plaintext", "Host: x", "Connection: close"),
        ("200 close",),
    ),
)


# --- HTTP/2 -----------------------------------------------------------------------------------

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
(
    DATA,
    HEADERS,
    PRIORITY,
    RST_STREAM,
    SETTINGS,
    PUSH_PROMISE,
    PING,
    GOAWAY,
    WINDOW_UPDATE,
    CONTINUATION,
) = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
ERRORS = {
    0: "NO_ERROR",
    1: "PROTOCOL_ERROR",
    2: "INTERNAL_ERROR",
    3: "FLOW_CONTROL_ERROR",
    4: "SETTINGS_TIMEOUT",
    5: "STREAM_CLOSED",
    6: "FRAME_SIZE_ERROR",
    7: "REFUSED_STREAM",
    8: "CANCEL",
    9: "COMPRESSION_ERROR",
    10: "CONNECT_ERROR",
    11: "ENHANCE_YOUR_CALM",
    12: "INADEQUATE_SECURITY",
    13: "HTTP_1_1_REQUIRED",
}


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes([kind, flags])
        + struct.pack(">I", stream)
        + payload
    )


def request_block(path: str = "/plaintext", method: str = "GET") -> bytes:
    return hpack.Encoder().encode(
        [(":method", method), (":scheme", "http"), (":path", path), (":authority", "localhost")]
    )


def hpack_int(value: int, prefix_bits: int, first: int = 0) -> bytes:
    """An HPACK integer (RFC 7541 §5.1) in a first byte carrying `first` in its high bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    return bytes(out + [value])


def hpack_literal(name: bytes, value: bytes, index: bool) -> bytes:
    """A literal header field with a new name, no Huffman: added to the dynamic table if `index`."""
    return (
        (b"\x40" if index else b"\x00")
        + hpack_int(len(name), 7)
        + name
        + hpack_int(len(value), 7)
        + value
    )


# GET / over http, authority localhost, without touching the dynamic table: :method, :scheme
# and :path indexed (2, 6, 4), :authority a literal without indexing on static name 1.
STATIC_GET = b"\x82\x86\x84\x01\x09localhost"


def headers(
    stream: int, path: str = "/plaintext", end_stream: bool = True, method: str = "GET"
) -> bytes:
    return frame(
        HEADERS,
        END_HEADERS | (END_STREAM if end_stream else 0),
        stream,
        request_block(path, method),
    )


@dataclass
class H2Conversation:
    """A raw HTTP/2 client connection after the handshake (preface, SETTINGS both ways, ACKs)."""

    sock: socket.socket
    frames: list[tuple[int, int, int, bytes]] = field(default_factory=list)
    sent: bytes = b""  # everything after the handshake, for the failure message
    send_failed: bool = False  # the server stopped taking bytes (what it sent may still be read)
    closed: bool = False
    _buf: bytes = b""

    @classmethod
    def open(
        cls, port: int, preface: bytes = PREFACE, handshake: bool = True, tls: bool = False
    ) -> "H2Conversation":
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls:  # h2 by ALPN; the test certificate is self-signed
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            context.set_alpn_protocols(["h2"])
            sock = context.wrap_socket(sock, server_hostname="localhost")
        conv = cls(sock)
        conv.send(preface + frame(SETTINGS, 0, 0))
        if handshake:
            conv.read_until(lambda f: f[0] == SETTINGS and not f[1] & ACK)
            conv.send(frame(SETTINGS, ACK, 0))
            conv.read_until(lambda f: f[0] == SETTINGS and f[1] & ACK)
            conv.frames.clear()
            conv.sent = b""
        return conv

    def send(self, data: bytes) -> None:
        self.sent += data
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            self.send_failed = True

    def read_until(
        self, done: Callable[[tuple[int, int, int, bytes]], bool], wait: float = WAIT
    ) -> bool:
        """Read frames until one satisfies `done` (True), or close / silence for `wait` (False)."""
        start = len(self.frames)
        deadline = time.monotonic() + 3 * wait
        while not self.closed and time.monotonic() < deadline:
            if any(done(f) for f in self.frames[start:]):
                return True
            self.sock.settimeout(wait)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return False
            except (ConnectionResetError, ssl.SSLError):
                chunk = b""
            if not chunk:
                self.closed = True
                break
            self._buf += chunk
            while len(self._buf) >= 9:
                length = int.from_bytes(self._buf[:3], "big")
                if len(self._buf) < 9 + length:
                    break
                kind, flags = self._buf[3], self._buf[4]
                stream = int.from_bytes(self._buf[5:9], "big") & 0x7FFFFFFF
                self.frames.append((kind, flags, stream, self._buf[9 : 9 + length]))
                self._buf = self._buf[9 + length :]
        return any(done(f) for f in self.frames[start:])

    def outcome(self, stream: int) -> str:
        """What the client saw, by the first decisive event (see the module docstring)."""
        self.read_until(lambda f: f[0] == GOAWAY or (f[0] == RST_STREAM and f[2] == stream))
        for kind, _flags, sid, payload in self.frames:
            if kind == GOAWAY:
                code = int.from_bytes(payload[4:8], "big")
                if code != 0:
                    return "goaway:" + ERRORS.get(code, str(code))
            if kind == RST_STREAM and sid == stream:
                return "rst:" + ERRORS.get(int.from_bytes(payload[:4], "big"), "?")
        for kind, flags, sid, payload in self.frames:
            if kind == HEADERS and sid == stream:
                status = hpack.Decoder().decode(payload)[0][1] if not flags & 0x28 else "?"
                return f"response:{status}"
            if kind == PING and flags & ACK and stream == 0:
                return "ping-ack:" + payload.hex()
        return "close" if self.closed else "nothing"

    def close(self) -> None:
        self.sock.close()


@dataclass(frozen=True)
class H2Case:
    name: str
    rfc: str
    requirement: str
    # Sends the case's frames on a conversation; returns the stream id the outcome is about.
    play: Callable[[H2Conversation], int]
    allowed: tuple[str, ...]
    handshake: bool = True
    preface: bytes = PREFACE


CONNECTION_ERROR = ("close",)  # closing without GOAWAY is allowed wherever a connection error is


def _conn(code: str) -> tuple[str, ...]:
    return (f"goaway:{code}",) + CONNECTION_ERROR


def _stream_or_conn(code: str) -> tuple[str, ...]:
    return (f"rst:{code}",) + _conn(
        code
    )  # a stream error MAY be treated as a connection error (§5.4)


def _then(
    *chunks: bytes, stream: int = 1, wait_for: Optional[int] = None
) -> Callable[[H2Conversation], int]:
    """Send `chunks` in order; if `wait_for` is a stream id, first wait for its response to end."""

    def play(conv: H2Conversation) -> int:
        for i, chunk in enumerate(chunks):
            conv.send(chunk)
            if wait_for is not None and i == 0:
                conv.read_until(
                    lambda f: f[2] == wait_for and f[1] & END_STREAM and f[0] in (HEADERS, DATA)
                )
                conv.frames.clear()  # that response was the setting; the outcome is what follows
        return stream

    return play


def _rst(stream: int, code: int = 8) -> bytes:
    return frame(RST_STREAM, 0, stream, struct.pack(">I", code))


def _settings(*entries: tuple[int, int], flags: int = 0, stream: int = 0) -> bytes:
    return frame(SETTINGS, flags, stream, b"".join(struct.pack(">HI", k, v) for k, v in entries))


def _window(stream: int, increment: int, size: int = 4) -> bytes:
    return frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", increment)[:size])


H2_CASES: tuple[H2Case, ...] = (
    H2Case(
        "preface-invalid",
        "9113 §3.4",
        "an invalid preface is a connection error PROTOCOL_ERROR",
        _then(b""),
        _conn("PROTOCOL_ERROR"),
        handshake=False,
        preface=b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
    ),
    H2Case(
        "stream-id-lower",
        "9113 §5.1.1",
        "a HEADERS on a lower, never used stream id: PROTOCOL_ERROR",
        _then(headers(5), headers(3), stream=3, wait_for=5),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "stream-id-even",
        "9113 §5.1.1",
        "a client stream id must be odd: PROTOCOL_ERROR",
        _then(headers(2), stream=2),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "idle-data",
        "9113 §5.1",
        "DATA on an idle stream: PROTOCOL_ERROR",
        _then(frame(DATA, END_STREAM, 1, b"x")),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "idle-rst",
        "9113 §5.1",
        "RST_STREAM on an idle stream: PROTOCOL_ERROR",
        _then(_rst(1)),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "idle-window-update",
        "9113 §5.1",
        "WINDOW_UPDATE on an idle stream: PROTOCOL_ERROR",
        _then(_window(1, 100)),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "half-closed-remote-data",
        "9113 §5.1",
        "DATA on a half-closed (remote) stream: STREAM_CLOSED",
        _then(headers(1, "/delay?ms=800"), frame(DATA, 0, 1, b"x")),
        _stream_or_conn("STREAM_CLOSED"),
    ),
    H2Case(
        "half-closed-remote-headers",
        "9113 §5.1",
        "HEADERS on a half-closed (remote) stream: STREAM_CLOSED",
        _then(
            headers(1, "/delay?ms=800"),
            frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block()),
        ),
        _stream_or_conn("STREAM_CLOSED"),
    ),
    H2Case(
        "closed-after-rst-data",
        "9113 §5.1",
        "DATA after the client's RST_STREAM: STREAM_CLOSED",
        _then(headers(1, end_stream=False), _rst(1), frame(DATA, 0, 1, b"x")),
        _stream_or_conn("STREAM_CLOSED"),
    ),
    H2Case(
        "closed-after-rst-headers",
        "9113 §5.1",
        "HEADERS after the client's RST_STREAM: STREAM_CLOSED",
        _then(headers(1, end_stream=False), _rst(1), headers(1)),
        _stream_or_conn("STREAM_CLOSED"),
    ),
    H2Case(
        "closed-after-end-stream-data",
        "9113 §5.1",
        "DATA after END_STREAM both ways: STREAM_CLOSED",
        _then(headers(1), frame(DATA, 0, 1, b"x"), wait_for=1),
        _stream_or_conn(
            "STREAM_CLOSED"
        ),  # §6.1: a stream error; §5.1 closed: MAY be a connection error
    ),
    H2Case(
        "closed-after-end-stream-headers",
        "9113 §5.1",
        "HEADERS after END_STREAM both ways: STREAM_CLOSED",
        _then(headers(1), headers(1), wait_for=1),
        _stream_or_conn("STREAM_CLOSED"),
    ),
    H2Case(
        "data-stream-0",
        "9113 §6.1",
        "DATA on stream 0: PROTOCOL_ERROR",
        _then(frame(DATA, 0, 0, b"x"), stream=0),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "headers-stream-0",
        "9113 §6.2",
        "HEADERS on stream 0: PROTOCOL_ERROR",
        _then(frame(HEADERS, END_HEADERS | END_STREAM, 0, request_block()), stream=0),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "priority-length",
        "9113 §6.3",
        "PRIORITY of other than 5 octets: FRAME_SIZE_ERROR",
        _then(frame(PRIORITY, 0, 1, b"\0\0\0\0")),
        _stream_or_conn("FRAME_SIZE_ERROR"),
    ),
    H2Case(
        "rst-stream-0",
        "9113 §6.4",
        "RST_STREAM on stream 0: PROTOCOL_ERROR",
        _then(_rst(0), stream=0),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "rst-length",
        "9113 §6.4",
        "RST_STREAM of other than 4 octets: FRAME_SIZE_ERROR",
        _then(headers(1, end_stream=False), frame(RST_STREAM, 0, 1, b"\0\0\0")),
        _conn("FRAME_SIZE_ERROR"),
    ),
    H2Case(
        "settings-ack-payload",
        "9113 §6.5",
        "SETTINGS ACK with a payload: FRAME_SIZE_ERROR",
        _then(_settings((1, 4096), flags=ACK), stream=0),
        _conn("FRAME_SIZE_ERROR"),
    ),
    H2Case(
        "settings-stream-1",
        "9113 §6.5",
        "SETTINGS on a stream: PROTOCOL_ERROR",
        _then(_settings(stream=1), stream=0),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "settings-length",
        "9113 §6.5",
        "SETTINGS not a multiple of 6 octets: FRAME_SIZE_ERROR",
        _then(frame(SETTINGS, 0, 0, b"\0\3\0\0"), stream=0),
        _conn("FRAME_SIZE_ERROR"),
    ),
    H2Case(
        "settings-enable-push",
        "9113 §6.5.2",
        "SETTINGS_ENABLE_PUSH other than 0 or 1: PROTOCOL_ERROR",
        _then(_settings((2, 2)), stream=0),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "settings-window-too-large",
        "9113 §6.5.2",
        "INITIAL_WINDOW_SIZE above 2^31-1: FLOW_CONTROL_ERROR",
        _then(_settings((4, 1 << 31)), stream=0),
        _conn("FLOW_CONTROL_ERROR"),
    ),
    H2Case(
        "settings-frame-size",
        "9113 §6.5.2",
        "MAX_FRAME_SIZE below 16384: PROTOCOL_ERROR",
        _then(_settings((5, 16383)), stream=0),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "ping-ack",
        "9113 §6.7",
        "a PING is answered by a PING ACK with the same payload",
        _then(frame(PING, 0, 0, b"loadbnch"), stream=0),
        ("ping-ack:" + b"loadbnch".hex(),),
    ),
    H2Case(
        "ping-length",
        "9113 §6.7",
        "PING of other than 8 octets: FRAME_SIZE_ERROR",
        _then(frame(PING, 0, 0, b"1234567"), stream=0),
        _conn("FRAME_SIZE_ERROR"),
    ),
    H2Case(
        "ping-stream-1",
        "9113 §6.7",
        "PING on a stream: PROTOCOL_ERROR",
        _then(frame(PING, 0, 1, b"12345678"), stream=0),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "goaway-stream-1",
        "9113 §6.8",
        "GOAWAY on a stream: PROTOCOL_ERROR",
        _then(frame(GOAWAY, 0, 1, b"\0" * 8), stream=0),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "window-update-zero",
        "9113 §6.9",
        "a connection WINDOW_UPDATE of 0: PROTOCOL_ERROR",
        _then(_window(0, 0), stream=0),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "window-update-length",
        "9113 §6.9",
        "WINDOW_UPDATE of other than 4 octets: FRAME_SIZE_ERROR",
        _then(_window(0, 1, size=3), stream=0),
        _conn("FRAME_SIZE_ERROR"),
    ),
    H2Case(
        "window-overflow",
        "9113 §6.9.1",
        "a window above 2^31-1: FLOW_CONTROL_ERROR",
        _then(_window(0, 0x7FFFFFFF), _window(0, 0x7FFFFFFF), stream=0),
        _conn("FLOW_CONTROL_ERROR"),
    ),
    H2Case(
        "continuation-alone",
        "9113 §6.10",
        "CONTINUATION without a HEADERS before it: PROTOCOL_ERROR",
        _then(frame(CONTINUATION, END_HEADERS, 1, request_block())),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "continuation-interrupted",
        "9113 §6.10",
        "another frame inside a header block: PROTOCOL_ERROR",
        _then(frame(HEADERS, END_STREAM, 1, request_block()), frame(PING, 0, 0, b"12345678")),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "frame-too-large",
        "9113 §4.2",
        "a frame above SETTINGS_MAX_FRAME_SIZE: FRAME_SIZE_ERROR",
        _then(headers(1, end_stream=False), frame(DATA, 0, 1, b"x" * 16385)),
        _conn("FRAME_SIZE_ERROR"),
    ),
    H2Case(
        "push-promise-from-client",
        "9113 §8.4",
        "a client cannot push: PROTOCOL_ERROR",
        _then(frame(PUSH_PROMISE, END_HEADERS, 1, b"\0\0\0\2" + request_block())),
        _conn("PROTOCOL_ERROR"),
    ),
    H2Case(
        "head-no-data",
        "9110 §9.3.2",
        "a HEAD response ends with its HEADERS (no content)",
        _then(headers(1, method="HEAD")),
        ("response:200",),
    ),
)


def run_h2(port: int, case: H2Case, tls: bool = False, sent: Optional[list[bytes]] = None) -> str:
    """The case's outcome; `sent` (if given) receives the bytes sent after the handshake."""
    conv = H2Conversation.open(port, case.preface, case.handshake, tls)
    try:
        stream = case.play(conv)
        if sent is not None:
            sent.append(conv.sent)
        result = conv.outcome(stream)
        if case.name == "head-no-data" and any(
            f[0] == DATA and f[2] == stream for f in conv.frames
        ):
            result += " +data"
        return result
    finally:
        conv.close()
