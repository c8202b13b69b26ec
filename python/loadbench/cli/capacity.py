"""`loadbench capacity URL --slo 'p99<10ms'`: how much load the server takes before its tail
latency (or error share) breaks the objectives - searched with open-loop steps, judged over each
step and each window inside it, the generator never mistaken for the server."""

from __future__ import annotations

import argparse
import sys

from ..core.errors import ConfigError, LoadbenchError
from ..core.schedule import parse_duration
from ..slo.search import SEARCH_OWNS, capacity
from ..slo.step import Step
from ._load_flags import (
    add_cluster_arguments,
    add_load_arguments,
    check_cluster_arguments,
    check_writable,
    load_kwargs,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "capacity",
        help="find the highest rate that meets latency/error objectives (p99<10ms, ...)",
        description="Search the highest open-loop rate at which URL meets every --slo: rise "
        "geometrically from a start rate until an objective fails, bisect to --precision, then "
        "confirm the rate --repeats times. Each step is judged over the whole step and over "
        "every --slo-window in it. A step the generator could not send on time (or its pool) "
        "bounds nothing: the search goes on below it to the highest rate the generator sends on "
        "time, and ends generator-bound with that lower bound and the server's CPU ceiling, "
        "never a capacity figure (docs/capacity.md).",
    )
    add_load_arguments(p, connections=25, exclude=SEARCH_OWNS)
    p.add_argument(
        "--slo",
        action="append",
        required=True,
        metavar="OBJECTIVE",
        help="an objective, repeatable: p99<10ms, p99.9<50ms, mean<2ms, max<100ms, errors<0.1%%",
    )
    p.add_argument(
        "--start",
        type=float,
        default=None,
        metavar="RATE",
        help="the first rate (req/s); default: half of what a closed-loop probe reaches",
    )
    p.add_argument("--step", default="5s", help="measured time per step (default 5s)")
    p.add_argument(
        "--hold",
        default=None,
        help="measured time of each confirmation of the answer (default: --step): bisect with "
        "short steps, then confirm that the rate holds this long",
    )
    p.add_argument(
        "--settle", default="1s", help="warm-up of each step at its rate, not judged (default 1s)"
    )
    p.add_argument(
        "--slo-window",
        default="1s",
        help="every window of this length inside a step must meet the objectives too (default 1s)",
    )
    p.add_argument(
        "--precision",
        type=float,
        default=2.0,
        metavar="PERCENT",
        help="stop bisecting when the passing and failing rates are this close (default 2)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="runs that confirm the found rate; it must pass all (default 3)",
    )
    p.add_argument(
        "--max-lateness",
        default="1ms",
        help="a step whose sends were later than this (p99) while the server answered within "
        "the objectives is generator-bound (default 1ms)",
    )
    p.add_argument("--max-steps", type=int, default=40, help="give up after this many steps")
    add_cluster_arguments(p, "every step (and the probe)")
    p.add_argument("--json", default=None, metavar="FILE", help="write every step as JSON")
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="draw latency percentiles vs achieved rate with the objectives and the capacity (PNG)",
    )
    p.set_defaults(func=main)


def _progress(step: Step) -> None:
    lat = step.latency_ms()
    p99 = f"p99 {lat['p99']:.3g} ms" if lat else "no answer"
    print(
        f"loadbench: {step.phase} {step.rate:,.0f} req/s: sent {step.achieved:,.0f}/s, {p99}: "
        f"{step.outcome}".replace(",", " "),
        file=sys.stderr,
    )


def main(args: argparse.Namespace) -> int:
    for flag, path in (("--json", args.json), ("--plot", args.plot)):
        if path is not None:
            check_writable(flag, path)
    check_cluster_arguments(args)
    kwargs = load_kwargs(args, exclude=SEARCH_OWNS)
    if args.precision <= 0 or args.precision >= 100:
        raise ConfigError(f"--precision {args.precision:g} is not a percentage in (0, 100)")
    runner = None
    if args.cluster is not None:
        from .. import distributed  # Dask is imported only when asked for

        runner = distributed.ClusterRunner(args.cluster, args.shards)
    try:
        found = capacity(
            args.url,
            args.slo,
            start=args.start,
            step=parse_duration(args.step, "--step"),
            hold=None if args.hold is None else parse_duration(args.hold, "--hold"),
            settle=parse_duration(args.settle, "--settle"),
            window=parse_duration(args.slo_window, "--slo-window"),
            precision=args.precision / 100,
            repeats=args.repeats,
            max_lateness=parse_duration(args.max_lateness, "--max-lateness"),
            max_steps=args.max_steps,
            sample_pid=args.sample_pid,
            on_step=_progress,
            runner=runner,
            **kwargs,
        )
    finally:
        if runner is not None:
            runner.close()
    print("\n".join(found.table_lines()))
    print(f"\n{found.message()}")
    try:
        if args.json:
            found.to_json(args.json)
        if args.plot:
            from ..slo.plot import plot_capacity

            plot_capacity(found, args.plot)
    except OSError as exc:  # the table above keeps what was measured
        raise LoadbenchError(f"cannot write {exc.filename}: {exc.strerror}") from None
    if found.outcome == "interrupted":
        return 130
    return 0 if found.outcome == "capacity" else 1
