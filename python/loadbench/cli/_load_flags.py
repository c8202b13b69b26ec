"""The flags every load-generating command takes (`run`, `capacity`): the URL, what is sent,
over how many connections and threads, which protocol and TLS, pinning and the server to sample.
Declared once here; each command adds its own (duration, rate, objectives, ...)."""

from __future__ import annotations

import argparse
import os
from dataclasses import fields
from pathlib import Path
from typing import Any, Optional

from ..core.errors import ConfigError
from ..core.options import FIELD_HELP, RunOptions
from ..core.schedule import parse_duration
from ._cpus import parse_cpu_list


def check_writable(flag: str, path: str) -> None:
    """The output file's folder exists and is writable (and the path is not a folder)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise ConfigError(f"{flag} {path!r} is a directory, not a file")
    if not folder.is_dir():
        raise ConfigError(f"{flag} {path!r}: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ConfigError(f"{flag} {path!r} is not writable")


def option_help(name: str, more: str = "") -> str:
    """A flag's help: the option's own text (RunOptions, written once) and its default."""
    default = next(f.default for f in fields(RunOptions) if f.name == name)
    shown = (
        ""
        if default is None
        else f"; default {default:g}"
        if isinstance(default, float)
        else f"; default {default}"
    )
    return f"{FIELD_HELP[name]}{shown}" + (f" ({more})" if more else "")


def add_load_arguments(p: argparse.ArgumentParser, connections: Optional[int] = 10) -> None:
    """The shared flags; ``connections``: -c's default (None: not passed unless given)."""
    p.add_argument(
        "url", help="http:// or https:// URL, or unix:PATH (http://localhost/ over that socket)"
    )
    p.add_argument(
        "-c", "--connections", type=int, default=connections, help=option_help("connections")
    )
    p.add_argument("-t", "--threads", type=int, default=1, help=option_help("threads"))
    p.add_argument("-m", "--method", default="GET", help=option_help("method"))
    p.add_argument(
        "--h2",
        "--http2",
        dest="h2",
        action="store_true",
        help="HTTP/2: h2c with prior knowledge for http://, ALPN h2 (only) for https://",
    )
    p.add_argument(
        "--h3",
        "--http3",
        dest="h3",
        action="store_true",
        help="HTTP/3 over QUIC: https:// only, ALPN h3 (only); needs a build with ngtcp2 and nghttp3",
    )
    p.add_argument(
        "-p",
        "--streams",
        type=int,
        default=1,
        metavar="N",
        help=option_help("streams", "-m is --method here, as in oha"),
    )
    p.add_argument(
        "--send-batch",
        default=None,
        metavar="SPAN",
        help=option_help("send_batch", "e.g. 1ms; oha's timer sends in 1 ms steps"),
    )
    p.add_argument(
        "--pipeline",
        type=int,
        default=1,
        metavar="N",
        help=option_help("pipeline", "TechEmpower's plaintext test uses 16"),
    )
    p.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="header (repeatable)",
    )
    p.add_argument("-b", "--body", default=None, help="request body")
    p.add_argument("--body-file", default=None, help="send this file as the request body")
    p.add_argument("--unix-socket", metavar="PATH", default=None, help=option_help("unix_socket"))
    p.add_argument("--insecure", action="store_true", default=True, help=option_help("insecure"))
    p.add_argument("--verify", action="store_true", help=option_help("verify"))
    p.add_argument("--cacert", default=None, help=option_help("cacert"))
    p.add_argument(
        "--tls-library",
        choices=("openssl", "wolfssl", "rustls"),
        default="openssl",
        help=option_help("tls_library"),
    )
    p.add_argument("--tls-resume", action="store_true", help=option_help("tls_session_resumption"))
    p.add_argument(
        "--h3-0rtt",
        dest="quic_early_data",
        action="store_true",
        help=option_help("quic_early_data", "needs --h3 --tls-resume"),
    )
    p.add_argument("--timeout", default="10s", help=option_help("timeout", "e.g. 10s"))
    p.add_argument("--cpus", default=None, help=option_help("cpus", "e.g. 1 or 2-3"))
    p.add_argument(
        "--arrival",
        choices=("constant", "poisson"),
        default="constant",
        help=option_help("arrival"),
    )
    p.add_argument("--max-connections", type=int, default=None, help=option_help("max_connections"))
    p.add_argument("--seed", type=int, default=1, help=option_help("seed"))
    p.add_argument(
        "--sample-pid",
        type=int,
        default=None,
        metavar="PID",
        help="read the server's CPU, memory and fds from /proc at the window's edges "
        "(PID and all its descendants): adds server CPU us/req",
    )


def load_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The loadbench.run keywords of the shared flags (only the protocol options asked for:
    a run's call names what it changes)."""
    if args.body is not None and args.body_file is not None:
        raise ConfigError("give either --body or --body-file, not both")
    body: Optional[object] = args.body
    if args.body_file is not None:
        body = Path(args.body_file)
    kwargs: dict[str, Any] = dict(
        threads=args.threads,
        method=args.method,
        headers=args.header,
        body=body,
        timeout=parse_duration(args.timeout, "timeout"),
        verify=args.verify,
        cacert=args.cacert,
        tls_session_resumption=args.tls_resume,
        tls_library=args.tls_library,
        unix_socket=args.unix_socket,
        cpus=parse_cpu_list(args.cpus) if args.cpus else None,
        arrival=args.arrival,
        max_connections=args.max_connections,
        seed=args.seed,
    )
    if args.connections is not None:
        kwargs.update(connections=args.connections)
    if args.send_batch is not None:
        kwargs.update(send_batch=parse_duration(args.send_batch, "send batch"))
    if args.h2 and args.h3:
        raise ConfigError("--h2 and --h3: choose one protocol")
    if args.h2 or args.h3 or args.streams != 1:
        protocol = "h2" if args.h2 else "h3" if args.h3 else "http/1.1"
        kwargs.update(protocol=protocol, streams=args.streams)
    if args.pipeline != 1:
        kwargs.update(pipeline=args.pipeline)
    if args.quic_early_data:
        kwargs.update(quic_early_data=True)
    return kwargs
