"""Helpers for the hostile-client tests: a well-behaved probe, /proc facts, abrupt closes."""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import struct
import time
from typing import Callable


def served(port: int, path: str = "/plaintext", timeout: float = 5.0) -> bool:
    """One well-behaved request on a fresh connection; True when it got its 200."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status == 200 and resp.read() == b"Hello, World!\n"
    finally:
        conn.close()


def served_tls(port: int, timeout: float = 5.0) -> bool:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, context=ctx)
    try:
        conn.request("GET", "/plaintext")
        resp = conn.getresponse()
        return resp.status == 200 and resp.read() == b"Hello, World!\n"
    finally:
        conn.close()


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid: int) -> float:
    """utime + stime of the whole process (all threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()


def reset_close(sock: socket.socket) -> None:
    """Close with an RST instead of a FIN (SO_LINGER 0): the client 'vanishes'."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def raw_connect(port: int, timeout: float = 5.0, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(timeout)
    sock.connect(("127.0.0.1", port))
    return sock


def send_ignoring_close(sock: socket.socket, data: bytes) -> int:
    """Send as much as the server takes; a server that closed on us is fine (returns bytes sent)."""
    sent = 0
    try:
        while sent < len(data):
            sent += sock.send(data[sent : sent + 65536])
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    return sent
