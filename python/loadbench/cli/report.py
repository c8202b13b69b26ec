"""`loadbench report RESULTS_DIR`: rewrite report.md and the charts from a sweep's raw results."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="write report.md and PNG charts from a sweep's results folder",
        description="Rebuild report.md and the charts of RESULTS_DIR from its results.jsonl, "
                    "sweep.json and environment.json (nothing is re-measured).")
    parser.add_argument("results_dir", metavar="RESULTS_DIR", help="a folder written by `loadbench sweep`")
    parser.add_argument("--no-charts", action="store_true", help="write report.md only")
    parser.add_argument("--baseline", metavar="SERVER", help="the server ratios divide by (default: the first)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..report import write_report

    directory = Path(args.results_dir)
    if not directory.is_dir():
        raise ConfigError(f"{directory} is not a directory")
    out = write_report(directory, charts=not args.no_charts, baseline=args.baseline)
    print(f"loadbench: wrote {out}")
    return 0
