"""`loadbench report RESULTS_DIR [--compare BASE_DIR] [--no-html] [--summary]`: rewrite report.md,
the charts and report.html (one offline file; --no-html: not it) from a sweep's raw results;
--summary prints the executive summary on the terminal and writes nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.errors import ConfigError
from ..report.document import summary_points, write_report
from ..report.executive_summary import terminal_text
from ..report.html import write_html


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write report.md, PNG charts and report.html from a sweep's results folder",
        description="Rebuild report.md and the charts of RESULTS_DIR from its results.jsonl, "
        "sweep.json and environment.json (nothing is re-measured).",
    )
    parser.add_argument(
        "results_dir", metavar="RESULTS_DIR", help="a folder written by `loadbench sweep`"
    )
    parser.add_argument(
        "--no-charts",
        action="store_true",
        help="no PNG charts (report.md only; report.html keeps its own)",
    )
    parser.add_argument(
        "--baseline", metavar="SERVER", help="the server ratios divide by (default: the first)"
    )
    parser.add_argument(
        "--html",
        action="store_true",
        help="report.html is written by default (tables, interactive charts and flame graphs in "
        "one file that works offline); the flag is kept for older scripts",
    )
    parser.add_argument(
        "--no-html", action="store_true", help="no report.html (report.md and the charts only)"
    )
    parser.add_argument(
        "--compare",
        metavar="BASE_DIR",
        help="add to report.html the comparison of RESULTS_DIR (new) against BASE_DIR (base), as "
        "`loadbench compare BASE_DIR RESULTS_DIR` computes it",
    )
    parser.add_argument(
        "--summary",
        action="store_true",
        help="print the executive summary (who leads, by how much, with what qualification) and "
        "write nothing",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    directory = Path(args.results_dir)
    if not directory.is_dir():
        raise ConfigError(f"{directory} is not a directory")
    if args.summary:
        if args.html or args.compare:
            raise ConfigError(
                "--summary prints the summary and writes nothing: drop --html/--compare"
            )
        print(terminal_text(summary_points(directory, args.baseline)))
        return 0
    if args.no_html and (args.compare or args.html):
        raise ConfigError(
            "--no-html writes no report.html: drop --html/--compare (--compare adds a section to it)"
        )
    out = write_report(directory, charts=not args.no_charts, baseline=args.baseline)
    print(f"loadbench: wrote {out}")
    if not args.no_html:
        print(
            f"loadbench: wrote {write_html(directory, compare_with=args.compare, baseline=args.baseline)}"
        )
    return 0
