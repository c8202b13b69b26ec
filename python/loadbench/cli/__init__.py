"""The `loadbench` command line: a thin shell over the Python API.

Each subcommand is one module in this package that defines
    register(subparsers) -> None      add its parser, set `func=<callable(args) -> int>`
Modules are discovered, so adding a subcommand touches only its own file.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from typing import Optional, Sequence

from ..core.errors import LoadbenchError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loadbench",
        description="HTTP benchmark engine: Beast reference servers, a C++ load generator, sweeps and reports.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        status = int(args.func(args) or 0)
        # Flush here, not at interpreter exit: a reader that left (`... | head`) must end in the
        # quiet path below, not in "Exception ignored ... BrokenPipeError" and exit 120.
        sys.stdout.flush()
        return status
    except LoadbenchError as exc:
        print(f"loadbench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("loadbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `loadbench run ... | head`: the reader left; quietly stop writing, as cat and grep do.
        # stdout now points at /dev/null, so the final flush at exit has nowhere to fail
        # (what Python's documentation on SIGPIPE recommends).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
