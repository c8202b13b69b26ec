"""`loadbench serve`: run the native Beast reference server in the foreground.

Flags mirror the `loadbench-server` binary (plus --cpus to pin it). Ctrl-C (or SIGTERM)
stops it gracefully and prints what it served.
"""

from __future__ import annotations

import argparse
import signal
from typing import Any, Optional

from ..core.errors import ConfigError, ServerError
from ..core.server import ServerProcess
from ._cpus import parse_cpu_list


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the Beast reference server in the foreground",
        description="Run the native Boost.Beast reference server (loadbench-server) until Ctrl-C, "
        "then print its counters. Routes: GET / and /plaintext, GET /json, POST /echo, GET /delay?ms=N.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="HTTP port, 0 = a free port (default 0)")
    p.add_argument(
        "--unix",
        metavar="PATH",
        help="plain HTTP (and h2c) on this unix socket instead of --port (loadbench run unix:PATH)",
    )
    p.add_argument("--no-http", action="store_true", help="no plain HTTP listener (needs --tls)")
    p.add_argument(
        "--tls",
        action="store_true",
        help="also serve HTTPS (self-signed EC P-256 unless --cert/--key)",
    )
    p.add_argument(
        "--tls-port", type=int, default=0, help="HTTPS port, 0 = a free port (default 0)"
    )
    p.add_argument("--cert", help="PEM certificate chain for HTTPS")
    p.add_argument("--key", help="PEM private key for HTTPS")
    p.add_argument("-w", "--workers", type=int, default=1, help="worker threads (default 1)")
    p.add_argument("--max-body", type=int, help="request body limit in bytes (default 1 MiB)")
    p.add_argument("--header-timeout-ms", type=int, help="request header timeout (default 10000)")
    p.add_argument("--idle-timeout-ms", type=int, help="keep-alive idle timeout (default 60000)")
    p.add_argument(
        "--accept", choices=["reuseport", "shared"], help="accept strategy (default reuseport)"
    )
    p.add_argument(
        "--no-h2",
        action="store_true",
        help="HTTP/1.1 only (default: h2c prior knowledge on --port, ALPN h2 with --tls)",
    )
    p.add_argument(
        "--h2-max-streams",
        type=int,
        help="HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; more streams are refused (default 100)",
    )
    p.add_argument(
        "--h2-max-requests",
        type=int,
        help="HTTP/2: GOAWAY after N streams on a connection (default 0 = never)",
    )
    p.add_argument(
        "--h3",
        action="store_true",
        help="also serve HTTP/3 (QUIC) over UDP on the TLS port's number (needs --tls); "
        'HTTP/1.1 and HTTP/2 responses then carry Alt-Svc: h3=":PORT"',
    )
    p.add_argument(
        "--h3-0rtt",
        dest="h3_0rtt",
        action="store_true",
        help="HTTP/3: accept 0-RTT early data on resumed connections, each ClientHello's once "
        "(GnuTLS anti-replay); early data is replayable (needs --h3)",
    )
    p.add_argument("--cpus", help="pin the server to these CPUs, e.g. 0 or 0-1")
    p.add_argument(
        "--allocations",
        action="store_true",
        help="count its heap allocations (LD_PRELOAD counter): `loadbench run --sample-pid PID` "
        "then reports allocs/req and bytes/req",
    )
    p.set_defaults(func=run)


def _server_from_args(args: argparse.Namespace) -> ServerProcess:
    if args.workers < 1:
        raise ConfigError("--workers must be at least 1")
    if args.h2_max_streams is not None and args.h2_max_streams < 1:
        raise ConfigError("--h2-max-streams must be at least 1")
    if args.h2_max_requests is not None and args.h2_max_requests < 0:
        raise ConfigError("--h2-max-requests must be 0 (no limit) or more")
    for name in ("port", "tls_port"):
        if not 0 <= getattr(args, name) <= 65535:
            raise ConfigError(f"--{name.replace('_', '-')} must be in 0..65535")
    return ServerProcess(
        workers=args.workers,
        host=args.host,
        port=args.port,
        unix=args.unix,
        http=not args.no_http,
        tls=args.tls,
        tls_port=args.tls_port,
        cert=args.cert,
        key=args.key,
        max_body=args.max_body,
        header_timeout_ms=args.header_timeout_ms,
        idle_timeout_ms=args.idle_timeout_ms,
        accept=args.accept,
        h2=not args.no_h2,
        h2_max_streams=args.h2_max_streams,
        h2_max_requests=args.h2_max_requests,
        h3=args.h3,
        h3_0rtt=args.h3_0rtt,
        cpus=parse_cpu_list(args.cpus) if args.cpus else None,
        allocations=args.allocations,
    )


def format_counters(stopped: dict) -> str:
    requests = stopped.get("requests", {})
    served = ", ".join(f"{name} {count}" for name, count in requests.items() if count)
    h2 = stopped.get("h2") or {}
    over_h2 = (
        f"; HTTP/2: {h2.get('requests', 0)} requests on {h2.get('connections', 0)} connections"
        if h2
        else ""
    )
    h3 = stopped.get("h3") or {}
    if h3.get("connections"):
        over_h2 += (
            f"; HTTP/3: {h3.get('requests', 0)} requests on {h3.get('connections', 0)} connections"
            f" ({h3.get('handshakes', 0)} handshakes, {h3.get('resumed', 0)} resumed,"
            f" {h3.get('zero_rtt', 0)} with 0-RTT accepted)"
        )
    return (
        f"loadbench serve: stopped; {stopped.get('requests_total', 0)} requests"
        f" ({served or 'none'}), {stopped.get('connections_accepted', 0)} connections accepted{over_h2}"
    )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    server = _server_from_args(args)
    # SIGTERM to this process stops the server the same way as Ctrl-C.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    stopped: Optional[dict] = None
    try:
        server.start()
        # Ctrl-C from the first line printed on stops the server and prints its counters (one
        # that came while the lines after "pid ..." were printed ended as "interrupted", 130)
        try:
            if server.unix_socket is not None:
                print(f"loadbench serve: listening on unix:{server.unix_socket}", flush=True)
            for https in (False, True):
                port = server.https_port if https else server.http_port
                if port is not None:
                    print(
                        f"loadbench serve: listening on {server.url('/', https=https)}", flush=True
                    )
            if server.h3 and server.https_port is not None:
                print(
                    f"loadbench serve: HTTP/3 on UDP port {server.https_port} (loadbench run --h3 "
                    f"{server.url('/', https=True)})",
                    flush=True,
                )
            print(
                f"loadbench serve: pid {server.pid}, {args.workers} worker(s); Ctrl-C stops",
                flush=True,
            )
            if server.cgroup_path:
                print(
                    f"loadbench serve: in cgroup {server.cgroup_path} (--sample-pid {server.pid} reads its exact CPU)",
                    flush=True,
                )
            if server.allocation_counter is not None:
                print(
                    f"loadbench serve: allocations counted in {server.allocation_counter.directory} "
                    f"(--sample-pid {server.pid} reports allocs/req)",
                    flush=True,
                )
            if not server.cgroup_path and server.cgroup_note:
                print(
                    f"loadbench serve: no cgroup of its own ({server.cgroup_note}); CPU is sampled from /proc",
                    flush=True,
                )
            code = server.proc.wait() if server.proc else 1
        except KeyboardInterrupt:
            stopped = server.stop()
        else:
            stopped = server.stop()
            if code != 0 or not stopped:
                raise ServerError(
                    f"loadbench-server exited unexpectedly (code {code}): {server.stderr_text() or 'no message'}"
                )
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.kill()
    print(format_counters(stopped or {}), flush=True)
    return 0
