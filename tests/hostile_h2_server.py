"""An h2c server (prior knowledge) that misbehaves on its first connection and serves the rest
correctly, for the generator's tests against hostile HTTP/2 servers.

Every connection answers each request (a HEADERS, or HEADERS + DATA, ending the stream) with
200 and `Hello, World!\\n`, counting the responses it sent. The first connection instead does
what `mode` says:
  no-settings        never sends SETTINGS (nor anything else); reads and discards
  endless-continuation
                     answers the first request with a HEADERS frame that never ends: CONTINUATION
                     frames, each a new header field, for as long as the client reads them
  zero-streams       SETTINGS_MAX_CONCURRENT_STREAMS 0, and never answers
  huge-table-update  answers with a header block that starts with a dynamic table size update to
                     2^30 (far over the client's SETTINGS_HEADER_TABLE_SIZE)
  window-closed      SETTINGS_INITIAL_WINDOW_SIZE 0 and no WINDOW_UPDATE ever: a request body
                     can never be sent, so no request ends
  honest             no hostile connection: every connection is served correctly
Every correct connection records what the client offered: its first SETTINGS (id -> value) in
`client_settings` and its connection-level WINDOW_UPDATE increments in `client_window_updates`.
Each connection is served on its own thread, bounded in time (`max_seconds`)."""

from __future__ import annotations

import socket
import struct
import time

import hpack
from conformance import (
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PING,
    SETTINGS,
    WINDOW_UPDATE,
    frame,
    hpack_literal,
)
from http_test_servers import ThreadedServer

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
ACK = 0x1
BODY = b"Hello, World!\n"
MODES = (
    "no-settings",
    "endless-continuation",
    "zero-streams",
    "huge-table-update",
    "window-closed",
    "honest",
)


class HostileH2Server(ThreadedServer):
    def __init__(self, mode: str, max_seconds: float = 10.0) -> None:
        assert mode in MODES, mode
        super().__init__()
        self.mode = mode
        self.max_seconds = max_seconds
        self.responses = 0  # sent by the well-behaved connections
        self.continuations_sent = 0
        self.client_settings: list[dict[int, int]] = []
        self.client_window_updates: list[int] = []
        self._hostile_taken = mode == "honest"

    def _serve(self, conn: socket.socket) -> None:
        with self.lock:
            hostile = not self._hostile_taken
            self._hostile_taken = True
        conn.settimeout(0.5)
        deadline = time.monotonic() + self.max_seconds
        try:
            if hostile:
                self._hostile(conn, deadline)
            else:
                self._honest(conn, deadline)
        except OSError:
            pass
        finally:
            conn.close()

    # --- frames in ---------------------------------------------------------------------
    @staticmethod
    def _frames(conn: socket.socket, deadline: float):
        """Yields (type, flags, stream, payload) after the preface, until close or deadline;
        None on every read timeout (a chance to act)."""
        buf = b""
        preface_seen = False
        while time.monotonic() < deadline:
            try:
                chunk = conn.recv(65536)
            except socket.timeout:
                yield None
                continue
            if not chunk:
                return
            buf += chunk
            if not preface_seen:
                if len(buf) < len(PREFACE):
                    continue
                buf, preface_seen = buf[len(PREFACE) :], True
            while len(buf) >= 9:
                length = int.from_bytes(buf[:3], "big")
                if len(buf) < 9 + length:
                    break
                yield (
                    buf[3],
                    buf[4],
                    int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF,
                    buf[9 : 9 + length],
                )
                buf = buf[9 + length :]

    # --- a correct server ----------------------------------------------------------------
    def _honest(self, conn: socket.socket, deadline: float, settings: bytes = b"") -> None:
        conn.sendall(frame(SETTINGS, 0, 0, settings))
        encoder = hpack.Encoder()
        for f in self._frames(conn, deadline):
            if f is None:
                continue
            kind, flags, stream, payload = f
            if (
                kind == DATA and payload
            ):  # give the connection window back, as a correct server does
                conn.sendall(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", len(payload))))
            if kind == SETTINGS and not flags & ACK:
                with self.lock:
                    self.client_settings.append(dict(struct.iter_unpack(">HI", payload)))
                conn.sendall(frame(SETTINGS, ACK, 0))
            elif kind == WINDOW_UPDATE and stream == 0:
                with self.lock:
                    self.client_window_updates.append(struct.unpack(">I", payload)[0] & 0x7FFFFFFF)
            elif kind == PING and not flags & ACK:
                conn.sendall(frame(PING, ACK, 0, payload))
            elif kind in (HEADERS, DATA) and flags & END_STREAM:
                block = encoder.encode([(":status", "200"), ("content-length", str(len(BODY)))])
                conn.sendall(
                    frame(HEADERS, END_HEADERS, stream, block)
                    + frame(DATA, END_STREAM, stream, BODY)
                )
                with self.lock:
                    self.responses += 1

    # --- the hostile first connection ------------------------------------------------------
    def _hostile(self, conn: socket.socket, deadline: float) -> None:
        if self.mode == "zero-streams":
            conn.sendall(frame(SETTINGS, 0, 0, struct.pack(">HI", 0x3, 0)))
        elif self.mode == "window-closed":
            conn.sendall(frame(SETTINGS, 0, 0, struct.pack(">HI", 0x4, 0)))
        elif self.mode != "no-settings":
            conn.sendall(frame(SETTINGS, 0, 0))
        for f in self._frames(conn, deadline):
            if f is None:
                continue
            kind, flags, stream, _ = f
            if self.mode == "no-settings":
                continue
            if kind == SETTINGS and not flags & ACK:
                conn.sendall(frame(SETTINGS, ACK, 0))
            elif kind == HEADERS and self.mode == "endless-continuation":
                return self._endless_continuation(conn, stream, deadline)
            elif kind == HEADERS and self.mode == "huge-table-update":
                update = bytes([0x3F]) + _hpack_int_tail(
                    (1 << 30) - 31
                )  # size update, 5-bit prefix
                conn.sendall(frame(HEADERS, END_HEADERS | END_STREAM, stream, update + b"\x88"))

    def _endless_continuation(self, conn: socket.socket, stream: int, deadline: float) -> None:
        conn.sendall(frame(HEADERS, 0, stream, b"\x88"))  # :status 200, and the block goes on
        field = hpack_literal(b"x-more", b"m" * 64, index=False)
        conn.settimeout(2.0)
        while time.monotonic() < deadline:
            conn.sendall(frame(CONTINUATION, 0, stream, field * 100))
            self.continuations_sent += 1


def _hpack_int_tail(rest: int) -> bytes:
    """The continuation bytes of an HPACK integer whose prefix was all ones (RFC 7541 §5.1)."""
    out = []
    while rest >= 128:
        out.append(rest % 128 + 128)
        rest //= 128
    return bytes(out + [rest])
