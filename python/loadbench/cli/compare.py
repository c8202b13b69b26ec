"""`loadbench compare BASE NEW [--fail 'rps:-5%'] [--format table|markdown|json]`: did it get
faster, slower, or is that noise - and, with --fail, a CI gate (exit 0 pass, 1 fail, 2 inconclusive)."""

from __future__ import annotations

import argparse
import sys

from ..core.errors import ConfigError
from ..report.comparison import compare
from ..report.regression import FORMATS, evaluate, parse_threshold


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare two results with statistics; with --fail, a regression gate for CI",
        description="Compare BASE and NEW (each a results folder with results.jsonl, a folder of "
        "`loadbench run --json` files, one such file, or a quoted glob of them) cell by cell: "
        "median of repeats per side, change in %%, a Hodges-Lehmann interval of the change and "
        "an exact Mann-Whitney U test across repeats ('~' = no significant difference). At least "
        "4 repeats per side are needed to conclude anything.",
        epilog="Exit status with --fail: 0 = no metric significantly worse beyond its threshold, 1 = one "
        "was (or a cell FAILed / answered non-2xx in NEW), 2 = inconclusive (too few repeats, an "
        "open-loop cell off its rate, a contended or generator-bound cell) or bad input.",
    )
    parser.add_argument("base", metavar="BASE", help="the baseline results")
    parser.add_argument("new", metavar="NEW", help="the results to judge")
    parser.add_argument(
        "--fail",
        action="append",
        default=[],
        metavar="METRIC:[+|-]N%",
        help="fail when METRIC (rps, cpu, p50, p99, p99.9) is significantly worse by more than "
        "N %% (repeatable), e.g. --fail 'rps:-5%%' --fail 'p99:+10%%'",
    )
    parser.add_argument(
        "--format",
        choices=("table", "markdown", "json"),
        default="table",
        help="output format (default table)",
    )
    parser.add_argument(
        "--metric",
        action="append",
        default=None,
        metavar="METRIC",
        help="compare only these metrics (repeatable; default all five)",
    )
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level (default 0.05)"
    )
    parser.add_argument(
        "--judge-flagged",
        action="store_true",
        help="judge contended and generator-bound cells too (default: they make the gate "
        "inconclusive)",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="also write the output to FILE")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    thresholds = [parse_threshold(t) for t in args.fail]
    if not 0 < args.alpha < 1:
        raise ConfigError(f"--alpha {args.alpha}: must be between 0 and 1")
    metrics = args.metric
    if metrics and thresholds:
        metrics = list(dict.fromkeys(metrics + [t.metric.name for t in thresholds]))
    frame = compare(args.base, args.new, metrics=metrics, alpha=args.alpha)
    if frame.empty:
        raise ConfigError(f"{args.base} and {args.new} have no measured cell to compare")
    gate = evaluate(frame, thresholds, judge_flagged=args.judge_flagged)
    text = FORMATS[args.format](frame, gate if thresholds else None)
    sys.stdout.write(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    if thresholds and args.format != "json":
        print(f"loadbench: gate {gate.word}", file=sys.stderr)
    return gate.status
