"""Small real-socket HTTP/1.1 servers with known, countable behaviour, for generator tests.

Each server runs in a background thread on 127.0.0.1 (port chosen by the kernel) and counts
the requests it answered and the connections it accepted, so tests can assert exact numbers.
Behaviours: "pattern" (200/404/500 in turn), "chunked", "delay" (/delay?ms=N), "close-each"
(Connection: close after every response), "close-mid" (closes halfway through a body),
"garbage" (answers bytes that are not HTTP), "silent" (reads, never answers). PipelineServer
answers pipelined requests and records how many arrived back to back before its first answer.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Optional
from urllib.parse import parse_qs, urlsplit

PATTERN = (200, 404, 500)
REASONS = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}


class ThreadedServer:
    """Accepts on 127.0.0.1 (a kernel-chosen port) and serves each connection on its own thread
    with `_serve(conn)`; counts connections; `with` starts it and shuts every socket down."""

    def __init__(self, backlog: int = 512) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=backlog)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.connections = 0
        self._stopping = threading.Event()
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self):
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._acceptor.join(5)
        for t in list(self._threads):
            t.join(5)

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.connections += 1
                self._conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _forget(self, conn: socket.socket) -> None:
        """A served connection is over: closed, and no longer one __exit__ must close."""
        with self.lock:
            if conn in self._conns:
                self._conns.remove(conn)
        conn.close()


class ScriptedServer(ThreadedServer):
    def __init__(self, behaviour: str = "pattern") -> None:
        super().__init__(backlog=512)
        self.behaviour = behaviour
        self.served = 0
        self.status_served: dict[int, int] = {}
        self.targets: dict[str, int] = {}
        self.request_bytes = 0

    def _read_request(self, conn: socket.socket, buf: bytearray) -> Optional[tuple[str, bytes]]:
        while b"\r\n\r\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            buf += chunk
        head, _, rest = bytes(buf).partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            rest += chunk
        buf[:] = rest[length:]
        target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode()
        with self.lock:
            self.targets[target] = self.targets.get(target, 0) + 1
            self.request_bytes += len(head) + 4 + length
        return target, head

    def _count(self, status: int) -> int:
        with self.lock:
            self.served += 1
            self.status_served[status] = self.status_served.get(status, 0) + 1
            return self.served

    def _serve(self, conn: socket.socket) -> None:
        buf = bytearray()
        try:
            while not self._stopping.is_set():
                req = self._read_request(conn, buf)
                if req is None:
                    return
                target, head = req
                b = self.behaviour
                if b == "silent":
                    self._stopping.wait()
                    return
                if b == "garbage":
                    conn.sendall(b"\x00\x01 this is not HTTP at all \r\n\r\n")
                    continue
                if b == "close-mid":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                    time.sleep(0.01)
                    return
                if b == "pattern":
                    with self.lock:
                        status = PATTERN[self.served % len(PATTERN)]
                        self.served += 1
                        self.status_served[status] = self.status_served.get(status, 0) + 1
                    body = b"x" * 10
                    conn.sendall(
                        f"HTTP/1.1 {status} {REASONS[status]}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                        + body
                    )
                    continue
                if b == "delay":
                    q = parse_qs(urlsplit(target).query)
                    time.sleep(float(q.get("ms", ["0"])[0]) / 1000.0)
                    self._count(200)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    continue
                if b == "chunked":
                    self._count(200)
                    parts = [b"Hello", b", ", b"chunked " * 100, b"World!\n"]
                    payload = (
                        b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts)
                        + b"0\r\n\r\n"
                    )
                    msg = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + payload
                    # split the response across several writes to exercise the incremental parser
                    for i in range(0, len(msg), 97):
                        conn.sendall(msg[i : i + 97])
                    continue
                if b == "close-each":
                    self._count(200)
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                    )
                    return
                if b == "keepalive-check":
                    # answers 200 and closes when the client asked for Connection: close
                    self._count(200)
                    close = b"connection: close" in head.lower()
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                        + (b"Connection: close\r\n" if close else b"")
                        + b"\r\nok"
                    )
                    if close:
                        return
                    continue
                raise ValueError(f"unknown behaviour {b}")
        except OSError:
            return
        finally:
            self._forget(conn)


class PipelineServer(ThreadedServer):
    """HTTP/1.1 for pipelining clients: every complete request in its buffer is answered, in
    order, in one write (GET requests without a body, as the generator sends them).

    gather: before its first answer on a connection it waits (up to gather_s) until this many
    complete requests are buffered, and records how many there were in `first_batch` - a client
    that pipelines has written them without waiting for an answer, one that does not has one.
    close_after=k: the k-th response on each connection says `Connection: close` and the server
    closes (`closes_sent` counts them); drop_after=k: it closes after the k-th response without
    saying so. silent: reads and never answers. Closes are lingering (shut down writing, read
    until the client closes), so the answers already written are never lost to a reset.
    """

    def __init__(
        self,
        gather: int = 1,
        gather_s: float = 1.0,
        close_after: Optional[int] = None,
        drop_after: Optional[int] = None,
        silent: bool = False,
    ) -> None:
        super().__init__(backlog=512)
        self.gather, self.gather_s = gather, gather_s
        self.close_after, self.drop_after, self.silent = close_after, drop_after, silent
        self.served = 0  # responses written
        self.received = 0  # complete requests read (answered or not)
        self.first_batch: list[int] = []
        self.closes_sent = 0
        self.drops = 0

    def _gather_first(self, conn: socket.socket, buf: bytearray) -> bool:
        deadline = time.monotonic() + self.gather_s
        try:
            while buf.count(b"\r\n\r\n") < self.gather:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                conn.settimeout(left)
                chunk = conn.recv(65536)
                if not chunk:
                    return False
                buf += chunk
        except socket.timeout:
            pass
        finally:
            conn.settimeout(None)
        with self.lock:
            self.first_batch.append(buf.count(b"\r\n\r\n"))
        return True

    def _serve(self, conn: socket.socket) -> None:
        buf = bytearray()
        answered = 0  # on this connection
        try:
            if not self._gather_first(conn, buf):
                return
            while not self._stopping.is_set():
                if b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                    continue
                out = bytearray()
                ending = False
                while b"\r\n\r\n" in buf and not ending:
                    del buf[: buf.index(b"\r\n\r\n") + 4]
                    with self.lock:
                        self.received += 1
                    if self.silent:
                        continue
                    answered += 1
                    close = self.close_after is not None and answered == self.close_after
                    ending = close or (self.drop_after is not None and answered == self.drop_after)
                    out += b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                    out += b"Connection: close\r\n\r\nok" if close else b"\r\nok"
                    with self.lock:
                        self.served += 1
                        self.closes_sent += close
                        self.drops += ending and not close
                if out:
                    conn.sendall(out)
                if ending:
                    conn.shutdown(socket.SHUT_WR)
                    conn.settimeout(5)
                    while conn.recv(65536):
                        pass
                    return
        except OSError:
            return
        finally:
            self._forget(conn)
