"""The accept path of the native server (cpp/core/server/accept_loop.cpp, net/accepted_socket.cpp).

The server accepts with accept4(SOCK_NONBLOCK | SOCK_CLOEXEC) in batches until the listen
queue is empty, instead of Asio's async_accept (see accepted_socket.hpp for the system calls
that saves). What a user can rely on, checked here on real sockets:
  - an accepted socket is non-blocking and close-on-exec from the start (plain and TLS);
  - every connection-per-request request is answered, and counted exactly once, with both
    accept strategies and several workers;
  - connections that queued up while the server could not run (one edge on the listener for
    all of them, more than one accept batch) are all accepted and answered.
Out of descriptors (EMFILE): tests/test_server_abuse.py.
"""

from __future__ import annotations

import os
import signal
import socket
import ssl
import threading
from pathlib import Path

import pytest
from server_helpers import connect, read_response

O_NONBLOCK = os.O_NONBLOCK
O_CLOEXEC = 0o2000000  # as /proc/<pid>/fdinfo shows it (os.O_CLOEXEC on Linux)

REQUEST = b"GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def server_side_flags(pid: int, server_port: int, client_port: int) -> int:
    """The file status flags of the server's socket for the connection from client_port."""
    inode = None
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if local_port == server_port and remote_port == client_port:
                inode = fields[9]
    assert inode is not None, "the server holds no socket for this connection"
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:
            continue
        if target == f"socket:[{inode}]":
            for line in Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text().splitlines():
                if line.startswith("flags:"):
                    return int(line.split()[1], 8)
    raise AssertionError(f"no descriptor of {pid} is socket:[{inode}]")


def test_accepted_plain_socket_is_non_blocking_and_close_on_exec(beast_server):
    port = beast_server.http_port
    with connect(port) as sock:
        # A keep-alive request answered: the connection is accepted and running.
        sock.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(sock.makefile("rb")).status == 200
        flags = server_side_flags(beast_server.pid, port, sock.getsockname()[1])
    assert flags & O_NONBLOCK, oct(flags)
    assert flags & O_CLOEXEC, oct(flags)


def test_accepted_tls_socket_is_non_blocking_and_close_on_exec(server_factory):
    server = server_factory(tls=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", server.https_port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as sock:
            sock.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(sock.makefile("rb")).status == 200
            flags = server_side_flags(server.pid, server.https_port, sock.getsockname()[1])
    assert flags & O_NONBLOCK, oct(flags)
    assert flags & O_CLOEXEC, oct(flags)


def one_request_per_connection(port: int) -> int:
    with connect(port) as sock:
        sock.sendall(REQUEST)
        return read_response(sock.makefile("rb")).status


@pytest.mark.parametrize("accept", ["reuseport", "shared"])
def test_every_connection_per_request_is_answered_and_counted(server_factory, accept):
    server = server_factory(workers=2, accept=accept)
    clients, per_client = 16, 25  # concurrent clients: the listener sees batches, not one at a time
    statuses: list[int] = []
    lock = threading.Lock()

    def client() -> None:
        mine = [one_request_per_connection(server.http_port) for _ in range(per_client)]
        with lock:
            statuses.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert statuses == [200] * (clients * per_client)
    stopped = server.stop()
    assert stopped["connections_accepted"] == clients * per_client
    assert stopped["connections_open"] == 0
    assert stopped["requests"]["plaintext"] == clients * per_client


@pytest.mark.parametrize("accept", ["reuseport", "shared"])
def test_connections_queued_while_the_server_was_stopped_are_all_served(server_factory, accept):
    server = server_factory(workers=2, accept=accept)
    count = 100  # several accept batches, all behind one edge of the listening socket
    os.kill(server.pid, signal.SIGSTOP)
    try:
        # The kernel completes the handshakes (listen backlog) and buffers the requests.
        socks = [connect(server.http_port, timeout=10) for _ in range(count)]
        for sock in socks:
            sock.sendall(REQUEST)
    finally:
        os.kill(server.pid, signal.SIGCONT)
    try:
        statuses = [read_response(sock.makefile("rb")).status for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    assert statuses == [200] * count
    stopped = server.stop()
    assert stopped["connections_accepted"] == count
    assert stopped["requests"]["plaintext"] == count
