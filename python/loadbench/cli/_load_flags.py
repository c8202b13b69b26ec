"""The flags every load-generating command takes (`run`, `capacity`): the URL, what is sent,
over how many connections and threads, which protocol and TLS, pinning and the server to sample.
Declared once here; each command adds its own (duration, rate, objectives, ...).

The flags of the options the engine takes unchanged are not written here at all: each is made
from its RunOptions declaration (``engine_option``: its flags, help, default and type), so a new
engine option reaches `loadbench run` with no line in this file (``add_option_flags``,
``option_kwargs``)."""

from __future__ import annotations

import argparse
import os
from dataclasses import fields
from pathlib import Path
from typing import Any, Collection, Optional

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
    text = f"{FIELD_HELP[name]}{shown}" + (f" ({more})" if more else "")
    return text.replace(
        "%", "%%"
    )  # argparse %-formats a help: a literal "20 %" must not break --help


def _flagged(exclude: Collection[str]) -> list:
    return [f for f in fields(RunOptions) if f.metadata.get("flags") and f.name not in exclude]


def add_option_flags(p: argparse.ArgumentParser, exclude: Collection[str] = ()) -> None:
    """A flag for every passed-through option that declares one (but ``exclude``: what the
    command sets itself). Each is None unless given, so a run's call names only what it
    changes."""
    for f in _flagged(exclude):
        meta = f.metadata
        help = option_help(f.name, meta["note"])
        if meta["type"] == "boolean":  # the flag says the opposite of the default
            const = not f.default
            p.add_argument(
                *meta["flags"], dest=f.name, action="store_const", const=const, help=help
            )
            continue
        kind = {"integer": int}.get(meta["type"], str)  # seconds: a duration, parsed below
        p.add_argument(
            *meta["flags"], dest=f.name, type=kind, default=None, metavar=meta["metavar"],
            choices=meta["choices"], help=help,
        )  # fmt: skip


def option_kwargs(args: argparse.Namespace, exclude: Collection[str] = ()) -> dict[str, Any]:
    """The loadbench.run keywords of the generated flags that were given."""
    kwargs: dict[str, Any] = {}
    for f in _flagged(exclude):
        value = getattr(args, f.name)
        if value is None:
            continue
        if f.metadata["type"] == "seconds":
            value = parse_duration(value, f.metadata["what"])
        kwargs[f.name] = value
    return kwargs


def add_load_arguments(
    p: argparse.ArgumentParser, connections: Optional[int] = 10, exclude: Collection[str] = ()
) -> None:
    """The shared flags; ``connections``: -c's default (None: not passed unless given);
    ``exclude``: options the command sets itself (no flag for them)."""
    p.add_argument(
        "url", help="http:// or https:// URL, or unix:PATH (http://localhost/ over that socket)"
    )
    p.add_argument(
        "-c", "--connections", type=int, default=connections, help=option_help("connections")
    )
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
    p.add_argument("--cpus", default=None, help=option_help("cpus", "e.g. 1 or 2-3"))
    p.add_argument(
        "--arrival",
        choices=("constant", "poisson"),
        default="constant",
        help=option_help("arrival"),
    )
    p.add_argument("--max-connections", type=int, default=None, help=option_help("max_connections"))
    loop = p.add_mutually_exclusive_group()
    loop.add_argument(
        "--busy-poll",
        dest="busy_poll",
        action="store_const",
        const=True,
        default=None,
        help=option_help("busy_poll"),
    )
    loop.add_argument(
        "--no-busy-poll",
        dest="busy_poll",
        action="store_const",
        const=False,
        help="open loop: keep the sleeping tick even on CPUs the generator has to itself",
    )
    p.add_argument(
        "--sample-pid",
        type=int,
        default=None,
        metavar="PID",
        help="read the server's CPU, memory and fds from /proc at the window's edges "
        "(PID and all its descendants): adds server CPU us/req",
    )
    add_option_flags(p, exclude)


def load_kwargs(args: argparse.Namespace, exclude: Collection[str] = ()) -> dict[str, Any]:
    """The loadbench.run keywords of the shared flags (only the protocol options asked for:
    a run's call names what it changes)."""
    if args.body is not None and args.body_file is not None:
        raise ConfigError("give either --body or --body-file, not both")
    body: Optional[object] = args.body
    if args.body_file is not None:
        body = Path(args.body_file)
    kwargs: dict[str, Any] = dict(
        method=args.method,
        headers=args.header,
        body=body,
        verify=args.verify,
        cacert=args.cacert,
        unix_socket=args.unix_socket,
        cpus=parse_cpu_list(args.cpus) if args.cpus else None,
        arrival=args.arrival,
        max_connections=args.max_connections,
        busy_poll=args.busy_poll,
    )
    if args.connections is not None:
        kwargs.update(connections=args.connections)
    if args.h2 and args.h3:
        raise ConfigError("--h2 and --h3: choose one protocol")
    if args.h2 or args.h3:
        kwargs.update(protocol="h2" if args.h2 else "h3")
    kwargs.update(option_kwargs(args, exclude))
    return kwargs


def add_cluster_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """--cluster and --shards, for a command whose runs (``what``) can go out over Dask workers."""
    p.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS",
        help=f"send {what} from Dask workers: tcp://HOST:8786, or 'local' for worker processes "
        "on this machine (docs/distributed.md)",
    )
    p.add_argument(
        "--shards",
        type=int,
        default=None,
        help=f"with --cluster: split {what} into N shards on N workers (default: every worker)",
    )


def check_cluster_arguments(args: argparse.Namespace) -> None:
    if args.shards is not None and args.cluster is None:
        raise ConfigError("--shards needs --cluster (a Dask scheduler address, or 'local')")
