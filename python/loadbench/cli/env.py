"""`loadbench env`: the Environment block (markdown table, or JSON with --json)."""

from __future__ import annotations

import argparse
import json

from ..core.environment import environment
from ._cpus import parse_cpu_list


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "env", help="print the environment block (machine, kernel, toolchain, pinning)"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a markdown table")
    p.add_argument(
        "--server-pid",
        type=int,
        metavar="PID",
        help="read the server's CPU affinity from this process",
    )
    p.add_argument("--server-cpus", metavar="LIST", help="the server's cores, e.g. 0-1")
    p.add_argument("--generator-cpus", metavar="LIST", help="the generator's cores, e.g. 2-3")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    server_cpus = parse_cpu_list(args.server_cpus, "--server-cpus") if args.server_cpus else None
    generator_cpus = (
        parse_cpu_list(args.generator_cpus, "--generator-cpus") if args.generator_cpus else None
    )
    env = environment(
        server_pid=args.server_pid, generator_cpus=generator_cpus, server_cpus=server_cpus
    )
    if args.json:
        print(json.dumps(env.to_dict(), indent=2))
    else:
        print(env.to_markdown(), end="")
    return 0
