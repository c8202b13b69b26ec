"""Small raw-socket HTTP helpers for the server tests (pipelining, malformed input, limits)."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import BinaryIO


@dataclass
class RawResponse:
    version: str
    status: int
    reason: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def read_response(stream: BinaryIO) -> RawResponse:
    """Read one Content-Length delimited response from a buffered socket file."""
    status_line = stream.readline()
    if not status_line:
        raise ConnectionError("connection closed before a response")
    version, status, reason = status_line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        line = stream.readline().decode("latin-1").rstrip("\r\n")
        if not line:
            break
        name, value = line.split(":", 1)
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = stream.read(length) if length else b""
    return RawResponse(version, int(status), reason, headers, body)


def connect(port: int, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def exchange(port: int, raw: bytes, count: int = 1, timeout: float = 5.0) -> list[RawResponse]:
    """Send `raw` bytes on a new connection and read `count` responses."""
    with connect(port, timeout) as sock:
        sock.sendall(raw)
        stream = sock.makefile("rb")
        return [read_response(stream) for _ in range(count)]


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (EOF or reset)."""
    chunks = []
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)
