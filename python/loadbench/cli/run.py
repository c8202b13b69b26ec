"""`loadbench run URL`: one load run with flags an oha or wrk user already knows."""

from __future__ import annotations

import argparse
import sys
from typing import Optional

from .. import distributed
from ..core.errors import ConfigError, LoadbenchError
from ..core.gate import LoadGate
from ..core.profile import CALL_GRAPHS, DEFAULT_CALL_GRAPH, DEFAULT_FREQUENCY_HZ
from ..core.run import run
from ..core.schedule import parse_duration
from ..core.summary import saturation_warning
from ._load_flags import (
    add_cluster_arguments,
    add_load_arguments,
    check_cluster_arguments,
    check_writable,
    load_kwargs,
    option_help,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="load a URL and report throughput, latency and errors",
        description="Load a URL (closed loop) and print req/s, latency percentiles, "
        "status codes, errors and the generator's own CPU cost.",
    )
    add_load_arguments(p, connections=None)  # 10, or a connections schedule's most
    p.add_argument(
        "-z", "-d", "--duration", default=None, help=option_help("duration", "e.g. 10s, 500ms, 2m")
    )
    p.add_argument("-n", "--requests", type=int, default=None, help=option_help("requests"))
    p.add_argument(
        "--no-prime",
        dest="prime",
        action="store_false",
        help="do not open and close one connection before the run (default: do, as wrk's "
        "address check does - a server's state can change at its first client close)",
    )
    p.add_argument(
        "-q", "-R", "--rate", type=float, default=None, metavar="RATE", help=option_help("rate")
    )
    p.add_argument(
        "--rate-schedule",
        default=None,
        metavar="'TIME:RATE, ...'",
        help=option_help("rate_schedule", "instead of --rate; no --duration needed"),
    )
    p.add_argument(
        "--steps",
        default=None,
        metavar="'RATE:DURATION, ...'",
        help=option_help("steps", "instead of --rate; no --duration needed"),
    )
    p.add_argument(
        "--connections-schedule",
        default=None,
        metavar="'TIME:CONNECTIONS, ...'",
        help=option_help("connections_schedule", "closed loop; no --duration or -c needed"),
    )
    p.add_argument(
        "--json",
        default=None,
        metavar="FILE",
        help="write the result as JSON (docs/run.md, Result JSON)",
    )
    p.add_argument(
        "--hdr-log",
        default=None,
        metavar="FILE",
        help="write the latency histogram as an HdrHistogram log",
    )
    add_cluster_arguments(p, "the run")
    p.add_argument(
        "--profile",
        default=None,
        metavar="DIR",
        help="with --sample-pid: sample the server's processes with `perf record` during the "
        "measured window only and write DIR/perf.folded, DIR/flamegraph.svg and DIR/top.md "
        "(its top functions; docs/run.md, Server CPU profile). A profiled window is slower: "
        "its req/s is not the server's",
    )
    p.add_argument(
        "--profile-frequency",
        type=int,
        default=DEFAULT_FREQUENCY_HZ,
        metavar="HZ",
        help=f"with --profile: samples per second per busy thread (default {DEFAULT_FREQUENCY_HZ})",
    )
    p.add_argument(
        "--profile-call-graph",
        choices=sorted(CALL_GRAPHS),
        default=DEFAULT_CALL_GRAPH,
        help="with --profile: how stacks are unwound - fp (frame pointers, cheap; the default) "
        "or dwarf (deep through code built without frame pointers, heavy)",
    )
    p.add_argument("--no-progress", action="store_true", help="no live progress line")
    p.add_argument(
        "--wait-quiet",
        nargs="?",
        type=float,
        const=120.0,
        default=None,
        metavar="SECONDS",
        help="before the run, wait until the machine is quiet (1-min load below 0.25 x cores, or "
        "other processes under 5 %% of the CPU over a second), at most SECONDS (default 120); "
        "the summary and JSON say whether it was quiet",
    )
    p.set_defaults(func=main)


class _ProgressLine:
    def __init__(self, stream) -> None:
        self.stream = stream
        self.width = 0

    def __call__(self, p: dict) -> None:
        if p["warming_up"]:
            text = f"warming up {p['elapsed_s']:.1f}/{p['warmup_s']:g} s"
        else:
            measured = max(p["elapsed_s"] - p["warmup_s"], 0.0)
            if p.get("requests"):
                done = p["responses"] + p["errors"]
                text = f"{done:,}/{p['requests']:,} requests  {measured:.1f} s"
            elif p.get("duration_s") and measured >= p["duration_s"]:
                # the window is over; its requests still in flight finish (up to --timeout)
                text = f"draining {measured - p['duration_s']:.1f} s  {p['responses']:,} responses"
            else:
                text = f"{measured:.1f}/{p['duration_s']:g} s  {p['responses']:,} responses"
            text += f"  {p['rps']:,.0f} req/s  errors {p['errors']:,}"
        self.width = max(self.width, len(text))
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()

    def clear(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def main(args: argparse.Namespace) -> int:
    if args.requests is not None and args.duration is not None:
        raise ConfigError("give either -z/--duration or -n/--requests, not both")
    if args.profile is not None and args.sample_pid is None:
        raise ConfigError("--profile needs --sample-pid PID: the server process to profile")
    if args.profile is not None and args.cluster is not None:
        raise ConfigError("--profile profiles a local server: not with --cluster")
    kwargs = load_kwargs(args)
    for flag, path in (("--json", args.json), ("--hdr-log", args.hdr_log)):
        if path is not None:
            check_writable(flag, path)  # before the run, not after minutes of load
    gate = None
    if args.wait_quiet is not None:
        gate = LoadGate(
            timeout_s=args.wait_quiet,
            on_wait=lambda text: print(f"loadbench: {text}", file=sys.stderr),
        ).wait()
    progress: Optional[_ProgressLine] = None
    if not args.no_progress and sys.stderr.isatty():
        progress = _ProgressLine(sys.stderr)
    check_cluster_arguments(args)
    kwargs.update(
        requests=args.requests,
        prime=args.prime,
        sample_pid=args.sample_pid,
        rate=args.rate,
    )
    if args.connections_schedule is not None:
        kwargs.update(connections_schedule=args.connections_schedule)
    if args.duration is not None:  # else 10 s, or as long as a rate schedule
        kwargs.update(duration=parse_duration(args.duration))
    if args.rate_schedule is not None:
        kwargs.update(rate_schedule=args.rate_schedule)
    if args.steps is not None:
        kwargs.update(steps=args.steps)
    lost: Optional[LoadbenchError] = None
    try:
        if args.cluster is not None:
            try:
                result = distributed.run(
                    args.url, cluster=args.cluster, shards=args.shards, **kwargs
                )
            except distributed.ShardLostError as exc:
                if exc.result is None:
                    raise
                result, lost = exc.result, exc  # keep and write what the other shards measured
        else:
            if args.profile is not None:
                kwargs.update(
                    profile=args.profile,
                    profile_frequency=args.profile_frequency,
                    profile_call_graph=args.profile_call_graph,
                )
            result = run(args.url, progress=progress, **kwargs)
    finally:
        if progress is not None:
            progress.clear()
    if gate is not None:
        result.extras["gate"] = gate.to_dict()
    print("\n".join(result.summary_lines()))
    if gate is not None:
        print(f"  load gate     {gate.describe()}")
    warning = saturation_warning(result)
    if warning:
        print(warning, file=sys.stderr)
    try:
        if args.json:
            result.to_json(args.json)
        if args.hdr_log:
            result.to_hdr_log(args.hdr_log)
    except OSError as exc:  # the summary above keeps what was measured
        raise LoadbenchError(f"cannot write {exc.filename}: {exc.strerror}") from None
    if lost is not None:
        raise LoadbenchError(str(lost))
    profile_error = (result.extras.get("profile") or {}).get("error")
    if profile_error:  # the summary and JSON above keep what was measured
        raise LoadbenchError(f"no profile: {profile_error}")
    if result.interrupted:
        return 130
    if result.responses == 0 and sum(result.errors.values()):
        # Nothing answered (refused port, TLS to a plain port, ...): the summary and JSON above
        # keep the counts, and the exit status says the run measured no server at all.
        kinds = ", ".join(f"{k} {n:,}" for k, n in result.errors.items() if n)
        raise LoadbenchError(
            f"no responses from {args.url} ({kinds}); first: {result.first_error or 'unknown'}"
        )
    return 0
