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

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\nContent-Type: text/plain\r\n\r\nHello, World!\n"


class Hangup(Exception):
    """Raised by an answer function: stop serving this connection (its socket is closed)."""


def reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    raise Hangup


class FaultServer:
    def __init__(self, answer: Callable[[socket.socket, int], None]) -> None:
        self.answer = answer
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.conns: list[socket.socket] = []

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> "FaultServer":
        t = threading.Thread(target=self._accept_loop, daemon=True)
        t.start()
        self.threads.append(t)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self.threads:
            t.join(5)

    def _accept_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                self.conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        index = 0
        try:
            while not self.stopping.is_set():
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


def dribble(data: bytes, interval_s: float, stopping: threading.Event | None = None) -> Callable[[socket.socket, int], None]:
    def answer(conn: socket.socket, index: int) -> None:
        for i in range(len(data)):
            conn.sendall(data[i:i + 1])
            time.sleep(interval_s)
    return answer
