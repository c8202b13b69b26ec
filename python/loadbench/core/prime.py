"""Priming: one connection the client opens and closes before a run, with no request on it.

A server's state can change the first time a client closes a connection, and a fresh server has
not seen one yet. CPython's asyncio is the measured case (reports/server-state.md): until a recv
first returns EOF, each 256 KiB receive buffer is shrunk to the bytes read instead of freed, so
glibc never raises its mmap threshold and every request costs an mmap, an mremap and a munmap -
the python-asyncio peer answered loadbench's 50 connections with 27 898 req/s fresh and 91 692
once one connection had been closed, at 36 against 11 us of its CPU per response (medians of 3). wrk and wrk2 open and close one connection
per address before every run (`wrk.resolve` -> `wrk.connect` in their src/wrk.lua and
src/script.c), so they always meet such a server switched; h2load, oha and a loadbench that did
not prime meet it fresh, and a second run differs from the first.

A run primes by default (``prime=False`` / ``--no-prime`` measures a process's first
connections as they are). The priming connection is opened before the run's clock and its
sampler window, and carries no bytes: the server sees a connection accepted and closed.
HTTP/3 is not primed: it has no TCP connection to close (``config.prime`` is false there).
"""

from __future__ import annotations

import socket
import urllib.parse
from typing import Optional

DEFAULT_PORTS = {"http": 80, "https": 443}
# Long enough for a loaded loopback server's accept queue; a server that does not accept in it is
# met by the run itself, which counts and reports what happens to its own connections.
PRIME_TIMEOUT_S = 2.0


def primes(protocol: str) -> bool:
    """Whether a run over ``protocol`` ("http/1.1", "h2", "h3") is primed: TCP ones only."""
    return protocol != "h3"


def prime(
    url: str, unix_socket: Optional[str] = None, timeout: float = PRIME_TIMEOUT_S
) -> Optional[str]:
    """Open one connection to the run's address (``unix_socket`` when given, else the URL's
    host and port) and close it without sending. Returns None, or why it could not connect: not
    an error here - the run meets the same server and reports its own connections' fate."""
    try:
        if unix_socket:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect(str(unix_socket))
            return None
        parts = urllib.parse.urlsplit(url)
        port = parts.port or DEFAULT_PORTS.get(parts.scheme, 80)
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except (OSError, ValueError) as exc:
        return str(exc)
    return None
