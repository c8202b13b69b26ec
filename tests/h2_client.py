"""A scripted HTTP/2 client over a plain socket (the `h2` package), for cases no ready-made
client produces: streams beyond the limit, frames that break the protocol, a client that
never reads. Bounded: every read has a timeout."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Optional

import pytest

pytest.importorskip("h2", reason="the Python h2 package is missing: pip install h2 (test extras)")
import h2.config  # noqa: E402  (after the skip above)
import h2.connection  # noqa: E402
import h2.events  # noqa: E402
import h2.settings  # noqa: E402


@dataclass
class StreamResult:
    status: Optional[int] = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    ended: bool = False
    reset: Optional[int] = None  # RST_STREAM error code


@dataclass
class GoAway:
    last_stream_id: int
    error_code: int


class H2Client:
    def __init__(self, port: int, timeout: float = 5.0, settings: Optional[dict] = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        )
        self.conn.initiate_connection()
        if settings:
            self.conn.update_settings(settings)
        self.streams: dict[int, StreamResult] = {}
        self.goaway: Optional[GoAway] = None
        self._pending = b""
        self.remote_settings: dict[int, int] = {}
        self.closed = False
        self.flush()

    def close(self) -> None:
        self.sock.close()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def send_raw(self, data: bytes) -> None:
        self.flush()
        self.sock.sendall(data)

    def ignore_stream_limit(self) -> None:
        """Open streams past the server's SETTINGS_MAX_CONCURRENT_STREAMS (h2 would refuse to)."""
        self.conn.remote_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = 2**31 - 1
        self.conn.remote_settings.acknowledge()

    def request(
        self, path: str, method: str = "GET", body: bytes = b"", headers=(), end: bool = True
    ) -> int:
        sid = self.conn.get_next_available_stream_id()
        hdrs = [
            (":method", method),
            (":path", path),
            (":scheme", "http"),
            (":authority", "127.0.0.1"),
            *headers,
        ]
        self.conn.send_headers(sid, hdrs, end_stream=end and not body)
        for at in range(0, len(body), 16384):  # the default SETTINGS_MAX_FRAME_SIZE
            self.conn.send_data(
                sid, body[at : at + 16384], end_stream=end and at + 16384 >= len(body)
            )
        self.streams[sid] = StreamResult()
        self.flush()
        return sid

    def send_body(self, sid: int, body: bytes, timeout: float = 10.0) -> None:
        """Sends `body` and ends the stream, waiting for window updates as flow control says."""
        deadline = time.monotonic() + timeout
        while body:
            n = min(len(body), 16384, self.conn.local_flow_control_window(sid))
            if n > 0:
                self.conn.send_data(sid, body[:n])
                body = body[n:]
                self.flush()
            elif time.monotonic() > deadline or not self.read_once(deadline - time.monotonic()):
                raise TimeoutError(f"stream {sid}: the flow-control window stayed shut")
        self.conn.end_stream(sid)
        self.flush()

    def read_once(self, timeout: float) -> bool:
        """One socket read, events applied; False on EOF/reset/timeout."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except OSError:
            self.closed = True
            return False
        if not data:
            self.closed = True
            return False
        for event in self.conn.receive_data(self._take_goaway(data)):
            self.apply(event)
        try:
            self.flush()
        except OSError:
            pass
        return True

    def _take_goaway(self, data: bytes) -> bytes:
        """Whole frames for h2, minus GOAWAY: h2 closes its state machine on a GOAWAY and then
        rejects the responses a server legitimately still sends for streams <= last_stream_id."""
        self._pending += data
        out = b""
        while len(self._pending) >= 9:
            length = int.from_bytes(self._pending[:3], "big")
            if len(self._pending) < 9 + length:
                break
            frame, self._pending = self._pending[: 9 + length], self._pending[9 + length :]
            if frame[3] == 0x7 and length >= 8:
                last = int.from_bytes(frame[9:13], "big") & 0x7FFFFFFF
                self.goaway = GoAway(last, int.from_bytes(frame[13:17], "big"))
            else:
                out += frame
        return out

    def apply(self, event: object) -> None:
        if isinstance(event, h2.events.ResponseReceived):
            s = self.streams.setdefault(event.stream_id, StreamResult())
            s.headers = dict(event.headers)
            s.status = int(s.headers[":status"])
        elif isinstance(event, h2.events.DataReceived):
            self.streams.setdefault(event.stream_id, StreamResult()).body += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self.streams.setdefault(event.stream_id, StreamResult()).ended = True
        elif isinstance(event, h2.events.StreamReset):
            self.streams.setdefault(event.stream_id, StreamResult()).reset = int(event.error_code)
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            for code, changed in event.changed_settings.items():
                self.remote_settings[int(code)] = changed.new_value

    def read_until(self, done, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not done() and not self.closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self.read_once(remaining)

    def finished(self, sid: int) -> bool:
        s = self.streams[sid]
        return s.ended or s.reset is not None

    def read_until_closed(self, timeout: float = 5.0) -> bool:
        self.read_until(lambda: False, timeout)
        return self.closed
