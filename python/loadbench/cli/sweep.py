"""`loadbench sweep [CONFIG.toml] [--out DIR] [--quick]`: run a sweep, then write its report.
`--plan` prints what it would measure; `--probe` starts each target and prints what it answers.

With no file: the default sweep (the embedded Beast server and every peer installed under
./bench/peers over http, https, h2c and h2, about 16 minutes on 2 cores with every peer) into
reports/<date>-<host>/. Running the same command again resumes an interrupted sweep.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Optional

from ..core.allocation_sites import heaptrack_missing
from ..core.allocations import library_path
from ..core.errors import ConfigError
from ..core.gate import LoadGate
from ..core.profile import perf_missing
from ..core.tcp_exchange import OPTIONS as TCP_OPTIONS
from ..report.document import headline_lines, write_report
from ..report.html import write_html
from ..report.model import load as load_model
from ..sweep.file import default_sweep, load_sweep
from ..sweep.probe import probe_sweep
from ..sweep.runner import Sweep


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="run a matrix of servers x workloads x loads and write report.md + charts",
        description="Run a sweep described by CONFIG.toml (see bench/sweeps/example.toml), or the default "
        "sweep (Beast + installed peers) without one. Each cell is appended to "
        "DIR/results.jsonl as it ends; the same command resumes an interrupted sweep.",
    )
    parser.add_argument(
        "config", nargs="?", metavar="CONFIG.toml", help="sweep file (default: the built-in sweep)"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="results folder (default: reports/<date>-<host>[-quick|-<config name>])",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the default sweep cut to a first look: about 3-4 minutes with the peers "
        ".ci/install.sh brings (1 repeat, 0.5 s cells, C = 25, no capacity search)",
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        default=None,
        help="generate every cell's load from Dask workers (tcp://HOST:8786, or 'local')",
    )
    parser.add_argument(
        "--shards", type=int, default=None, help="with --cluster: workers per cell (default: all)"
    )
    parser.add_argument(
        "--tls-library",
        choices=("openssl", "wolfssl", "rustls"),
        default=None,
        help="the generator's TLS library for https/h2 cells (default: the sweep file's, else "
        "openssl; rustls: the cheapest client handshake, where the build has it)",
    )
    parser.add_argument(
        "--ack-with-request",
        action="store_true",
        default=None,
        help="connection-setup cells: the handshake's last ACK rides on the request (see run --help)",
    )
    parser.add_argument(
        "--rst-close",
        action="store_true",
        default=None,
        help="connection-setup cells: close connections the server closed with RST (see run --help)",
    )
    parser.add_argument(
        "--allocations",
        action="store_true",
        help="count every started server's heap allocations (allocs/req, bytes/req; costs the "
        "servers a little CPU, so off by default)",
    )
    parser.add_argument(
        "--allocation-sites",
        action="store_true",
        help="after the cells, one short heaptrack window per server: where it allocates "
        "(function, calls/req, bytes/req; slow, never timed)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after each closed-loop and connection-setup cell, one more window with perf on the "
        "server: its CPU profile and flame graph (profiles/; never timed)",
    )
    parser.add_argument(
        "--twin",
        action="append",
        default=None,
        metavar="TARGET",
        help="list TARGET a second time as TARGET-again, the same server measured as another one: "
        "an A/A check of the sweep's noise (the report must read the pair as ≈ in every "
        "protocol); repeatable",
    )
    parser.add_argument(
        "--no-report", action="store_true", help="measure only; `loadbench report DIR` later"
    )
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print the cells that would run here and the planned time, then exit (measures nothing)",
    )
    parser.add_argument(
        "--probe",
        action="store_true",
        help="start each target for each protocol as the sweep would, send every workload's "
        "request once, print what it answered (status and bytes, or the error) and stop it; "
        "measures nothing, exit 1 when a target did not start or a request got no 2xx answer",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="do not wait for a quiet machine before the sweep and each cell (recorded as skipped)",
    )
    parser.add_argument(
        "--contended-reruns",
        type=int,
        default=None,
        metavar="N",
        help="re-run a cell that other processes or the hypervisor's steal disturbed up to N "
        "times, then keep it marked contended (default: the sweep file's, else 2; 0 keeps the "
        "first window, marked - on a machine that is never quiet)",
    )
    parser.add_argument(
        "--wait-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="wait at most this long for a quiet machine before the sweep, then measure anyway "
        "and say so in the report (default 120; before each cell at most 20 s, or this if "
        "shorter)",
    )
    parser.add_argument(
        "--quiet-load",
        type=float,
        default=None,
        metavar="LOAD",
        help="1-min load average counted as quiet (default 0.25 x logical cores); also quiet: "
        "other processes under 5 %% of the CPU over the last second",
    )
    parser.set_defaults(func=run)


def default_out_dir(quick: bool = False, config: Optional[str] = None) -> Path:
    """reports/<date>-<host>, with -quick or -<config name> so different sweeps never share one."""
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")
    host = socket.gethostname().split(".")[0] or "host"
    suffix = "-quick" if quick else (f"-{Path(config).stem}" if config else "")
    return Path("reports") / f"{date}-{host}{suffix}"


def free_out_dir(sweep: "Sweep", base: Path) -> Path:
    """The default folder, or BASE-2, BASE-3, ... when BASE holds another sweep's results (a
    sweep committed from another machine or checkout, or one with other peers installed): the
    main command never fails or mixes results for a folder the user did not name."""
    out, n = base, 2
    while sweep.holds_other_sweep(out):
        out, n = base.with_name(f"{base.name}-{n}"), n + 1
    return out


def _probe(sweep: "Sweep") -> int:
    print(
        f"loadbench: probing {len(sweep.targets)} server(s) x {len(sweep.protocols)} protocol(s) x "
        f"{len(sweep.workloads)} workload(s): each started as the sweep starts it, one request "
        "per workload, nothing measured",
        file=sys.stderr,
    )
    width = max([len(t.name) for t in sweep.targets] + [6])
    failed = skipped = 0
    for answer in probe_sweep(sweep):
        failed += not answer.ok
        skipped += answer.text.startswith("not measured: ")
        print(
            f"  {answer.target:<{width}} {answer.protocol:<6} {answer.workload or '-':<12} "
            f"{answer.text}",
            flush=True,
        )
    if failed:
        print(
            f"loadbench: {failed} probe(s) failed (a server that did not start, or no 2xx "
            "answer): a sweep would record failed cells or measure error pages",
            file=sys.stderr,
        )
        return 1
    # a protocol not served, or a runtime not installed, is what the sweep skips too: said, not failed
    more = f" ({skipped} target x protocol pair(s) not measured, said above)" if skipped else ""
    print(f"loadbench: every served workload answered 2xx{more}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.config and args.quick:
        raise ConfigError(
            "--quick shortens the default sweep; edit the file's duration/repeats instead"
        )
    sweep = load_sweep(args.config) if args.config else default_sweep(quick=args.quick)
    if args.cluster is not None or args.shards is not None:
        sweep.cluster = args.cluster or sweep.cluster
        sweep.shards = args.shards or sweep.shards
        if sweep.shards is not None and sweep.cluster is None:
            raise ConfigError("--shards needs --cluster (a Dask scheduler address, or 'local')")
    for option in TCP_OPTIONS:
        if getattr(args, option):
            setattr(sweep, option, True)
    if args.tls_library is not None:
        sweep.tls_library = args.tls_library
        sweep.check_tls_library()
    if args.twin:
        sweep.twins = list(dict.fromkeys([*sweep.twins, *args.twin]))
        sweep.add_twins()
    if args.contended_reruns is not None:
        if args.contended_reruns < 0:
            raise ConfigError(f"--contended-reruns {args.contended_reruns}: must be 0 or more")
        sweep.contended_reruns = args.contended_reruns
    if args.allocations:
        library_path()  # one clear error before any server starts
        sweep.allocations = True
    if args.allocation_sites:
        if missing := heaptrack_missing():
            raise ConfigError(missing)
        sweep.allocation_sites = True
    if args.profile:
        if missing := perf_missing():
            raise ConfigError(missing)
        sweep.profile = True
    if args.probe:
        if args.plan:
            raise ConfigError("--plan and --probe: choose one (--plan starts nothing)")
        return _probe(sweep)
    out = Path(args.out) if args.out else default_out_dir(args.quick, args.config)
    if not args.out and (free := free_out_dir(sweep, out)) != out:
        print(
            f"loadbench: {out} holds another sweep's results (left as they are); writing to {free}",
            file=sys.stderr,
        )
        out = free
    cells = sweep.cells()
    peers = Path(sweep.peers_dir) if sweep.peers_dir else None
    by_target = {t.name: t for t in sweep.targets}
    runnable = [
        c
        for c in cells
        if not by_target[c.target].unavailable_reason(c.protocol, peers)
        and c.workload not in by_target[c.target].unsupported_workloads
    ]
    planned = (
        f"{len(runnable)} to measure here, planned {sweep.planned_seconds(runnable) / 60:.1f} min on a quiet "
        "machine plus re-runs of contended windows"
    )
    print(
        f"loadbench: sweep of {len(cells)} cells ({planned}; "
        f"{len(sweep.targets)} servers: {', '.join(t.name for t in sweep.targets)}) -> {out}",
        file=sys.stderr,
    )
    if args.plan:
        groups: dict = {}
        for c in runnable:
            groups.setdefault((c.target, c.protocol), []).append(c)
        for (target, protocol), group in groups.items():
            searches = sum(1 for c in group if c.mode == "capacity")
            more = (
                f" (with {searches} capacity search(es) of ~{sweep.capacity_steps()} steps)"
                if searches
                else ""
            )
            print(
                f"  {target:<16} {protocol:<6} {len(group):>3} repeats, "
                f"{sweep.planned_seconds(group):5.1f} s{more}"
            )
        searches = [c for c in runnable if c.mode == "capacity"]
        if searches:
            print(
                f"  capacity under {' and '.join(sweep.capacity)}: {len(searches)} search(es), "
                f"{sum(sweep.planned_cell_seconds(c) for c in searches):.0f} s of the plan "
                f"(~{sweep.capacity_steps()} steps each, bisected to "
                f"{100 * sweep.capacity_precision:g} %; a capacity far from the closed-loop peak "
                "takes more)"
            )
        return 0
    gate = LoadGate(
        quiet_load=args.quiet_load,
        timeout_s=args.wait_timeout,
        enabled=not args.no_wait,
        cell_timeout_s=min(args.wait_timeout, 20.0),
    )
    started = time.monotonic()

    def terminate(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM: stop the servers and keep the finished cells, like Ctrl-C

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        results = sweep.run(out, progress=not args.no_progress, gate=gate)
    except KeyboardInterrupt:
        print(
            f"\nloadbench: interrupted; every finished cell is in {out / 'results.jsonl'}. "
            f"Run the same command again to resume, or `loadbench report {out}` for a report of what is there.",
            file=sys.stderr,
        )
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    took = time.monotonic() - started
    print(f"loadbench: measured in {took / 60:.1f} min; raw results {results}", file=sys.stderr)
    if not args.no_report:
        report = write_report(out)
        print(f"loadbench: wrote {report}")
        print(f"loadbench: wrote {write_html(out)}")  # beside report.md, always (issue 58)
        print("\n".join(headline_lines(load_model(out))))
    return 0
