"""`loadbench env`: the Environment block (markdown table, or JSON with --json)."""
from __future__ import annotations

import argparse
import json

from ..environment import environment


def parse_cpu_list(text: str) -> list[int]:
    """'0-1,3' -> [0, 1, 3] (the taskset -c form)."""
    cpus: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid CPU list {text!r}: expected e.g. 0-1,3") from None
    if not cpus or min(cpus) < 0:
        raise argparse.ArgumentTypeError(f"invalid CPU list {text!r}: expected e.g. 0-1,3")
    return cpus


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("env", help="print the environment block (machine, kernel, toolchain, pinning)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a markdown table")
    p.add_argument("--server-pid", type=int, metavar="PID", help="read the server's CPU affinity from this process")
    p.add_argument("--server-cpus", type=parse_cpu_list, metavar="LIST", help="the server's cores, e.g. 0-1")
    p.add_argument("--generator-cpus", type=parse_cpu_list, metavar="LIST", help="the generator's cores, e.g. 2-3")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    env = environment(server_pid=args.server_pid, generator_cpus=args.generator_cpus, server_cpus=args.server_cpus)
    if args.json:
        print(json.dumps(env.to_dict(), indent=2))
    else:
        print(env.to_markdown(), end="")
    return 0
