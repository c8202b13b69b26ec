"""A misbehaving HTTP server for the generator fault tests.

FaultServer(answer) accepts on 127.0.0.1 and, per connection, reads each request head and
calls answer(conn, index) with the request's index on that connection; the function decides
what the client gets (bytes, silence, a reset, a close). Counts connections and requests.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Callable

from http_test_servers import ThreadedServer

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\nContent-Type: text/plain\r\n\r\nHello, World!\n"


class Hangup(Exception):
    """Raised by an answer function: stop serving this connection (its socket is closed)."""


def reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    raise Hangup


class FaultServer(ThreadedServer):
    def __init__(self, answer: Callable[[socket.socket, int], None]) -> None:
        super().__init__(backlog=256)
        self.answer = answer
        self.requests = 0

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        index = 0
        try:
            while not self._stopping.is_set():
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                _, buf = buf.split(b"\r\n\r\n", 1)
                with self.lock:
                    self.requests += 1
                self.answer(conn, index)
                index += 1
        except (Hangup, OSError):
            pass
        finally:
            conn.close()


def dribble(
    data: bytes, interval_s: float, stopping: threading.Event | None = None
) -> Callable[[socket.socket, int], None]:
    def answer(conn: socket.socket, index: int) -> None:
        for i in range(len(data)):
            conn.sendall(data[i : i + 1])
            time.sleep(interval_s)

    return answer
