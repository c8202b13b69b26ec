#!/usr/bin/env python3
"""Python asyncio peer for the loadbench sweeps: the standard library only, no framework.

    python3 bench/peers/python/server.py PORT [--workers N] [--tls CERT KEY] [--host H]

Routes mirror the Beast reference server: GET / and /plaintext -> "Hello, World!\\n"
(text/plain), GET /json -> {"message":"Hello, World!"}, POST /echo -> the body back with its
content type; other paths 404, a known path with the wrong method 405. HTTP/1.1 keep-alive
(HTTP/1.0 closes unless it asks for keep-alive), pipelined requests answered in order.

asyncio runs one event loop per process, so N workers are N processes sharing the port
with SO_REUSEPORT (the kernel spreads connections), the same worker count every other peer
gets. Workers also come from PYTHON_WORKERS when --workers is absent. Prints one JSON line
{"event": "ready", ...} once every worker listens; SIGTERM/SIGINT stop all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import ssl
import sys
from typing import Optional

PLAINTEXT = b"Hello, World!\n"
MAX_HEAD = 16 * 1024
MAX_BODY = 8 * 1024 * 1024
ROUTES = {b"/": b"GET", b"/plaintext": b"GET", b"/json": b"GET", b"/echo": b"POST"}
REASONS = {
    200: b"OK",
    400: b"Bad Request",
    404: b"Not Found",
    405: b"Method Not Allowed",
    413: b"Payload Too Large",
    431: b"Request Header Fields Too Large",
    501: b"Not Implemented",
}


def response(
    status: int, body: bytes, content_type: bytes, keep_alive: bool, extra: bytes = b""
) -> bytes:
    head = (
        b"HTTP/1.1 %d %s\r\nServer: loadbench-python-peer\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
        % (status, REASONS[status], content_type, len(body))
    )
    if not keep_alive:
        head += b"Connection: close\r\n"
    return head + extra + b"\r\n" + body


class HttpProtocol(asyncio.Protocol):
    """One connection: buffer bytes, answer every complete request, keep the order."""

    def __init__(self) -> None:
        self.transport: Optional[asyncio.Transport] = None
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        out = []
        while True:
            answer = self._next_request()
            if answer is None:
                break
            payload, keep_alive = answer
            out.append(payload)
            if not keep_alive:
                self.transport.write(b"".join(out))
                self.transport.close()
                return
        if out:
            self.transport.write(b"".join(out))

    def _next_request(self) -> Optional[tuple[bytes, bool]]:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD:
                return response(431, b"", b"text/plain", False), False
            return None
        lines = self.buffer[:end].split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            return response(400, b"Bad Request\n", b"text/plain", False), False
        method, target, version = parts
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                return response(400, b"Bad Request\n", b"text/plain", False), False
            headers[name.strip().lower()] = value.strip()
        if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
            return response(
                501, b"chunked request bodies are not supported\n", b"text/plain", False
            ), False
        try:
            length = int(headers.get(b"content-length", b"0"))
        except ValueError:
            return response(400, b"Bad Request\n", b"text/plain", False), False
        if length < 0 or length > MAX_BODY:
            return response(413, b"", b"text/plain", False), False
        if len(self.buffer) < end + 4 + length:
            return None
        body = self.buffer[end + 4 : end + 4 + length]
        self.buffer = self.buffer[end + 4 + length :]

        connection = headers.get(b"connection", b"").lower()
        keep_alive = (
            connection != b"close" if version == b"HTTP/1.1" else connection == b"keep-alive"
        )
        path = target.split(b"?", 1)[0]
        allowed = ROUTES.get(path)
        if allowed is None:
            return response(404, b"Not Found\n", b"text/plain", keep_alive), keep_alive
        if method != allowed:
            return response(
                405,
                b"Method Not Allowed\n",
                b"text/plain",
                keep_alive,
                b"Allow: " + allowed + b"\r\n",
            ), keep_alive
        if path == b"/json":
            # Serialised per request, like every framework benchmark's JSON test.
            body_out = json.dumps({"message": "Hello, World!"}, separators=(",", ":")).encode()
            return response(200, body_out, b"application/json", keep_alive), keep_alive
        if path == b"/echo":
            content_type = headers.get(b"content-type", b"application/octet-stream")
            return response(200, body, content_type, keep_alive), keep_alive
        return response(200, PLAINTEXT, b"text/plain", keep_alive), keep_alive


def listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(4096)
    sock.setblocking(False)
    return sock


def serve(sock: socket.socket, tls: Optional[ssl.SSLContext], ready_fd: Optional[int]) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = loop.create_future()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
        server = await loop.create_server(HttpProtocol, sock=sock, ssl=tls)
        if ready_fd is not None:
            os.write(ready_fd, b"1")
            os.close(ready_fd)
        await stop
        server.close()

    asyncio.run(main())


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int, help="TCP port (0 = any free port)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("PYTHON_WORKERS", "1")))
    parser.add_argument(
        "--tls", nargs=2, metavar=("CERT", "KEY"), help="serve HTTPS with this PEM pair"
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    tls = None
    if args.tls:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(*args.tls)
    sock = listening_socket(args.host, args.port)
    port = sock.getsockname()[1]
    if args.workers == 1:
        print(
            json.dumps({"event": "ready", "pid": os.getpid(), "port": port, "workers": 1}),
            flush=True,
        )
        serve(sock, tls, None)
        return 0

    # N processes, each with its own SO_REUSEPORT socket on the same port.
    children: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        for child in children:
            try:
                os.kill(child, signum)
            except ProcessLookupError:
                pass

    # Installed before the first fork: a stop that arrives while workers start reaches them all.
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for _ in range(args.workers):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # asyncio installs its own in serve()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.close(read_fd)
            child_sock = sock if not children else listening_socket(args.host, port)
            try:
                serve(child_sock, tls, write_fd)
            finally:
                os._exit(0)
        os.close(write_fd)
        if os.read(read_fd, 1) != b"1":
            print("server.py: a worker failed to start", file=sys.stderr)
            for child in children:
                os.kill(child, signal.SIGTERM)
            return 1
        os.close(read_fd)
        children.append(pid)
    sock.close()
    print(
        json.dumps({"event": "ready", "pid": os.getpid(), "port": port, "workers": args.workers}),
        flush=True,
    )

    status = 0
    for _ in children:
        _, code = os.wait()
        status = status or os.waitstatus_to_exitcode(code)
        # One worker gone means the port is half-served: stop the rest, exit non-zero.
        forward(signal.SIGTERM, None)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
