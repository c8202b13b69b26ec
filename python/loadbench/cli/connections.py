"""`loadbench connections URL -c N`: memory per idle keep-alive connection (C10k)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..core.connections import hold_connections
from ..core.errors import ConfigError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "connections",
        help="hold N idle keep-alive connections and measure memory per connection",
        description="Open N keep-alive connections to URL (raising the open-file limit as needed), wait "
        "until the server has accepted them, measure memory (this generator's growth, and with "
        "--sample-pid the server tree's RSS and PSS growth) per connection, then send one request on each "
        "to prove they are live.",
    )
    p.add_argument("url", help="http://host:port/path")
    p.add_argument(
        "-c", "--connections", type=int, default=10_000, help="connections to hold (default 10000)"
    )
    p.add_argument("--sample-pid", type=int, help="the server's pid: its memory per connection too")
    p.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to open them all, and for the answers"
    )
    p.add_argument("--json", metavar="FILE", help="write the record as JSON ('-' = stdout)")
    p.set_defaults(func=run)


def _kib(value: Any) -> str:
    return f"{value:,.0f} B" if value is not None else "n/a"


def run(args: argparse.Namespace) -> int:
    if args.connections < 1:
        raise ConfigError("--connections must be at least 1")
    if not args.timeout > 0:
        raise ConfigError("--timeout must be positive")
    record = hold_connections(
        args.url,
        args.connections,
        sample_pid=args.sample_pid,
        timeout=args.timeout,
        progress=lambda message: print(f"loadbench connections: {message}", file=sys.stderr),
    )
    if args.json == "-":
        print(json.dumps(record, indent=2))
    else:
        gen = record["generator"]
        print(
            f"held {record['connections_held']:,} of {record['connections']:,} connections, "
            f"{record['requests_ok']:,} answered 2xx"
        )
        print(
            f"  generator  {_kib(gen['bytes_per_connection'])} per connection "
            f"({gen['holder_bytes_per_connection']} B of holder state each)"
        )
        server = record.get("server")
        if server:
            print(
                f"  server     RSS {_kib(server['rss_bytes_per_connection'])} / PSS "
                f"{_kib(server['pss_bytes_per_connection'])} per connection "
                f"({server['accepted']:,} accepted, pid {server['pid']})"
            )
        if record["first_error"]:
            print(f"  first error: {record['first_error']}")
        if args.json:
            Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
    ok = (
        record["connections_held"] == record["connections"]
        and record["requests_ok"] == record["connections_held"]
    )
    return 0 if ok else 1
