"""Memory per idle connection (C10k): hold N keep-alive connections, measure, prove them live.

    loadbench.hold_connections("http://127.0.0.1:8080/", 10_000, sample_pid=server_pid)

1. raises this process's open-file limit to N + a margin (and says so in `fd_limit` when it
   cannot: then fewer connections are held);
2. opens N connections from a native holder (an fd and a state byte each, one epoll set, no
   buffer while idle), a bounded number of connects in flight;
3. waits until the server has accepted them all - with `sample_pid`, until its tree holds N
   more open descriptors than before;
4. measures: this process's RSS growth / N (`generator.bytes_per_connection`), and with
   `sample_pid` the server tree's RSS and PSS growth / N;
5. sends one request on each connection; `requests_ok` counts 2xx answers (proof that every
   held connection was live, not a socket the server had given up on).
"""

from __future__ import annotations

import resource
import socket
import time
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

from . import _core
from .errors import ConfigError, LoadbenchError
from .sampler import Sampler

FD_MARGIN = 256  # descriptors this process needs beside the held connections
STABLE_S = 2.0  # the server's descriptor count unchanged this long: it accepted what it will


def own_rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def raise_fd_limit(needed: int) -> tuple[int, str]:
    """Raises RLIMIT_NOFILE (soft, and hard when allowed) to `needed`; returns the soft limit
    now and a note ("" when nothing had to be said)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return soft, ""
    if hard != resource.RLIM_INFINITY and hard < needed:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (needed, needed))
            return needed, f"raised the open-file limit from {soft} (hard {hard}) to {needed}"
        except (ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            return hard, (
                f"the open-file limit is {hard} (hard) and cannot be raised to {needed} here "
                "(raising the hard limit needs CAP_SYS_RESOURCE: ulimit -Hn)"
            )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    return needed, f"raised the open-file limit from {soft} to {needed}"


def _target(url: str) -> tuple[str, int, str, str]:
    parts = urlsplit(url)
    if parts.scheme != "http":
        raise ConfigError(f"connections needs an http:// URL, not {url!r} (TLS is not held)")
    if not parts.hostname:
        raise ConfigError(f"no host in URL {url!r}")
    port = parts.port or 80
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ConfigError(f"cannot resolve {parts.hostname!r}: {exc}") from None
    address = infos[0][4][0]
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.netloc.rsplit("@", 1)[-1]
    return address, port, path, host


def _server_reading(sampler: Any) -> dict[str, Any]:
    snap = sampler.snapshot()
    if snap.exited:
        raise LoadbenchError(f"the sampled server (pid {sampler.pid}) exited")
    return {
        "rss_kib": snap.rss_kib,
        "pss_kib": snap.pss_kib,
        "fds": snap.fds,
        "processes": len(snap.pids),
    }


def hold_connections(
    url: str,
    connections: int = 10_000,
    *,
    sample_pid: Optional[int] = None,
    timeout: float = 60.0,
    accept_timeout: float = 30.0,
    progress: Optional[Callable[[str], None]] = None,
    tree: bool = True,
) -> dict[str, Any]:
    """Holds `connections` idle keep-alive connections to `url`; returns the JSON-ready record
    described in the module docstring. `tree`: sample `sample_pid` with its descendants (a
    sweep passes its target's setting, as for the load cells)."""
    if isinstance(connections, bool) or not isinstance(connections, int) or connections < 1:
        raise ConfigError(f"connections must be an integer >= 1, not {connections!r}")
    say = progress or (lambda message: None)
    address, port, path, host = _target(url)
    limit, fd_note = raise_fd_limit(connections + FD_MARGIN)
    asked = connections
    if limit < connections + FD_MARGIN:
        connections = max(1, limit - FD_MARGIN)
        fd_note += f"; holding {connections} connections instead of {asked}"
    if fd_note:
        say(fd_note)

    sampler = None
    server_before: dict[str, Any] = {}
    if sample_pid is not None:
        sampler = Sampler(sample_pid, tree=tree)
        server_before = _server_reading(sampler)

    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: loadbench\r\n\r\n".encode()
    generator_before = own_rss_kib()
    holder = _core.ConnectionHolder(address, port, connections, request)
    try:
        started = time.monotonic()
        opened = holder.open(timeout)
        open_s = time.monotonic() - started
        say(f"{opened.connected} of {connections} connections open in {open_s:.2f} s")

        server_after: dict[str, Any] = {}
        accepted: Optional[int] = None
        if sampler is not None:
            # Accepted = the server holds a descriptor for each (its tree's fd count grew by N).
            # A server whose other descriptors change meanwhile may never show exactly +N: a count
            # that has not moved for STABLE_S ends the wait too.
            deadline = time.monotonic() + accept_timeout
            last, last_change = -1, time.monotonic()
            while True:
                server_after = _server_reading(sampler)
                accepted = server_after["fds"] - server_before["fds"]
                now = time.monotonic()
                if accepted != last:
                    last, last_change = accepted, now
                if accepted >= opened.connected or now > deadline or now - last_change > STABLE_S:
                    break
                time.sleep(0.05)
            time.sleep(0.2)  # lazily allocated per-connection state settles
            server_after = _server_reading(sampler)
            accepted = server_after["fds"] - server_before["fds"]
            say(f"the server holds {accepted} more descriptors")
        generator_after = own_rss_kib()
        held = holder.held()
        answered = holder.request_all(timeout)
        say(f"{answered.ok} of {held} held connections answered 2xx")
    finally:
        holder.close()

    n = max(held, 1)
    record: dict[str, Any] = {
        "url": url,
        "connections": asked,
        "connections_held": held,
        "connect_failed": opened.failed,
        "requests_ok": answered.ok,
        "requests_non_2xx": answered.non_2xx,
        "requests_failed": answered.failed,
        "first_error": opened.first_error or answered.first_error,
        "open_s": open_s,
        "fd_limit": {"soft": limit, "note": fd_note},
        "generator": {
            "rss_before_kib": generator_before,
            "rss_after_kib": generator_after,
            "bytes_per_connection": max(0, generator_after - generator_before) * 1024 / n,
            "holder_bytes_per_connection": int(_core.ConnectionHolder.bytes_per_slot),
        },
    }
    if sampler is not None:
        pss_before, pss_after = server_before["pss_kib"], server_after["pss_kib"]
        record["server"] = {
            "pid": sample_pid,
            "processes": server_after["processes"],
            "accepted": accepted,
            "fds_before": server_before["fds"],
            "fds_after": server_after["fds"],
            "rss_before_kib": server_before["rss_kib"],
            "rss_after_kib": server_after["rss_kib"],
            "pss_before_kib": pss_before,
            "pss_after_kib": pss_after,
            "rss_bytes_per_connection": (server_after["rss_kib"] - server_before["rss_kib"])
            * 1024
            / n,
            "pss_bytes_per_connection": (
                (pss_after - pss_before) * 1024 / n
                if pss_before is not None and pss_after is not None
                else None
            ),
        }
    return record


def hold_shortfall(record: dict[str, Any]) -> Optional[str]:
    """Why a hold record falls short of what was asked, in one line (None when every asked
    connection was held and answered 2xx): the fd limit, failed connects, connections the
    server dropped, non-2xx answers or failed requests."""
    asked, held = record["connections"], record["connections_held"]
    reasons = []
    note = (record.get("fd_limit") or {}).get("note") or ""
    if "instead of" in note:  # raise_fd_limit could not make room for every connection
        reasons.append(f"fd limit: {note}")
    if record.get("connect_failed"):
        reasons.append(f"{record['connect_failed']} of {asked} connects failed")
    lost = asked - held - int(record.get("connect_failed") or 0)
    if lost > 0 and "instead of" not in note:
        reasons.append(f"{lost} connection(s) closed by the server before the measurement")
    if record["requests_ok"] < held:
        reasons.append(
            f"{record['requests_ok']} of {held} answered 2xx ({record.get('requests_non_2xx', 0)} non-2xx, "
            f"{record.get('requests_failed', 0)} failed)"
        )
    if held == 0 and not reasons:
        reasons.append("no connection held")
    if not reasons:
        return None
    first = record.get("first_error")
    return "; ".join(reasons) + (f" (first error: {first})" if first else "")
