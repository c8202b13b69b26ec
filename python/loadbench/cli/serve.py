"""`loadbench serve`: run the native Beast reference server in the foreground.

Its flags are the `loadbench-server` binary's, as the binary declares them
(core/server/base/options.hpp, through :func:`loadbench.core.server.server_options`), plus --cpus to
pin it and --allocations. Ctrl-C (or SIGTERM)
stops it gracefully and prints what it served.
"""

from __future__ import annotations

import argparse
import signal
from typing import Any, Optional

from ..core.errors import ConfigError, ServerError
from ..core.profile import (
    CALL_GRAPHS,
    DEFAULT_CALL_GRAPH,
    DEFAULT_FREQUENCY_HZ,
    Profiler,
    check_profile_settings,
    perf_missing,
)
from ..core.sampler import Sampler
from ..core.server import ServerProcess, server_options
from ..core.summary import profile_lines
from ._cpus import parse_cpu_list


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the Beast reference server in the foreground",
        description="Run the native Boost.Beast reference server (loadbench-server) until Ctrl-C, "
        "then print its counters. Routes: GET / and /plaintext, GET /json, POST /echo, GET /delay?ms=N.",
    )
    for option in server_options():
        _add_option(p, option)
    p.add_argument("--cpus", help="pin the server to these CPUs, e.g. 0 or 0-1")
    p.add_argument(
        "--allocations",
        action="store_true",
        help="count its heap allocations (LD_PRELOAD counter): `loadbench run --sample-pid PID` "
        "then reports allocs/req and bytes/req",
    )
    p.add_argument(
        "--profile",
        default=None,
        metavar="DIR",
        help="sample the server with `perf record` from start to stop and write DIR/perf.folded, "
        "DIR/flamegraph.svg and DIR/top.md on exit (docs/run.md, Server CPU profile)",
    )
    p.add_argument(
        "--profile-frequency", type=int, default=DEFAULT_FREQUENCY_HZ, metavar="HZ",
        help=f"with --profile: samples per second per busy thread (default {DEFAULT_FREQUENCY_HZ})",
    )  # fmt: skip
    p.add_argument(
        "--profile-call-graph", choices=sorted(CALL_GRAPHS), default=DEFAULT_CALL_GRAPH,
        help="with --profile: fp (frame pointers, cheap; the default) or dwarf (deep, heavy)",
    )  # fmt: skip
    p.set_defaults(func=run)


# `loadbench serve`'s short forms of the binary's flags
SHORT = {"--workers": "-w"}


def _add_option(p: argparse.ArgumentParser, option: dict) -> None:
    """One flag of the binary (core/server/base/options.hpp, via server_options()), as the binary
    reads it; its range is checked once, by the binary, whose message names the flag."""
    names = [option["flag"], *([SHORT[option["flag"]]] if option["flag"] in SHORT else [])]
    kind, help_text = option["kind"], option["help"]
    common = {"dest": option["keyword"], "default": None}
    if kind == "on":
        p.add_argument(*names, action="store_true", help=help_text, **common)
    elif kind == "off":
        p.add_argument(*names, action="store_false", help=help_text, **common)
    else:
        help_text += f" (default {option['default']})" if option["default"] else ""
        typed: dict[str, Any] = {"type": int} if kind == "integer" else {}
        if kind == "accept":
            typed = {"choices": option["metavar"].split("|")}
        elif option["metavar"]:
            typed["metavar"] = option["metavar"]
        p.add_argument(*names, help=help_text, **typed, **common)


def _server_from_args(args: argparse.Namespace) -> ServerProcess:
    given = {
        o["keyword"]: getattr(args, o["keyword"])
        for o in server_options()
        if getattr(args, o["keyword"]) is not None
    }
    return ServerProcess(
        **given,
        cpus=parse_cpu_list(args.cpus) if args.cpus else None,
        allocations=args.allocations,
    )


def format_counters(stopped: dict) -> str:
    requests = stopped.get("requests", {})
    served = ", ".join(f"{name} {count}" for name, count in requests.items() if count)
    h2 = stopped.get("h2") or {}
    over_h2 = (
        f"; HTTP/2: {h2.get('requests', 0)} requests on {h2.get('connections', 0)} connections"
        if h2
        else ""
    )
    h3 = stopped.get("h3") or {}
    if h3.get("connections"):
        over_h2 += (
            f"; HTTP/3: {h3.get('requests', 0)} requests on {h3.get('connections', 0)} connections"
            f" ({h3.get('handshakes', 0)} handshakes, {h3.get('resumed', 0)} resumed,"
            f" {h3.get('zero_rtt', 0)} with 0-RTT accepted)"
        )
    return (
        f"loadbench serve: stopped; {stopped.get('requests_total', 0)} requests"
        f" ({served or 'none'}), {stopped.get('connections_accepted', 0)} connections accepted{over_h2}"
    )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    if args.profile is not None:  # before the server starts: nothing to keep yet
        check_profile_settings(args.profile_frequency, args.profile_call_graph)
        if missing := perf_missing():
            raise ConfigError(missing)
    server = _server_from_args(args)
    # SIGTERM to this process stops the server the same way as Ctrl-C.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    stopped: Optional[dict] = None
    profiled: Optional[_Profiled] = None
    try:
        server.start()
        if args.profile is not None:
            profiled = _Profiled(args, server.pid)
        # Ctrl-C from the first line printed on stops the server and prints its counters (one
        # that came while the lines after "pid ..." were printed ended as "interrupted", 130)
        try:
            if server.unix_socket is not None:
                print(f"loadbench serve: listening on unix:{server.unix_socket}", flush=True)
            for https in (False, True):
                port = server.https_port if https else server.http_port
                if port is not None:
                    print(
                        f"loadbench serve: listening on {server.url('/', https=https)}", flush=True
                    )
            if server.h3 and server.https_port is not None:
                print(
                    f"loadbench serve: HTTP/3 on UDP port {server.https_port} (loadbench run --h3 "
                    f"{server.url('/', https=True)})",
                    flush=True,
                )
            print(
                f"loadbench serve: pid {server.pid}, {server.workers} worker(s); Ctrl-C stops",
                flush=True,
            )
            if server.cgroup_path:
                print(
                    f"loadbench serve: in cgroup {server.cgroup_path} (--sample-pid {server.pid} reads its exact CPU)",
                    flush=True,
                )
            if server.allocation_counter is not None:
                print(
                    f"loadbench serve: allocations counted in {server.allocation_counter.directory} "
                    f"(--sample-pid {server.pid} reports allocs/req)",
                    flush=True,
                )
            if not server.cgroup_path and server.cgroup_note:
                print(
                    f"loadbench serve: no cgroup of its own ({server.cgroup_note}); CPU is sampled from /proc",
                    flush=True,
                )
            code = server.proc.wait() if server.proc else 1
        except KeyboardInterrupt:
            if profiled is not None:
                profiled.stop()  # before the server: perf ends by itself when its pids exit
            stopped = server.stop()
        else:
            if profiled is not None:
                profiled.stop()
            stopped = server.stop()
            if code != 0 or not stopped:
                raise ServerError(
                    f"loadbench-server exited unexpectedly (code {code}): {server.stderr_text() or 'no message'}"
                )
    except BaseException:
        if profiled is not None:
            profiled.profiler.abandon()
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.kill()
    print(format_counters(stopped or {}), flush=True)
    if profiled is not None:
        block = profiled.finish((stopped or {}).get("requests_total") or 0)
        print("\n".join(profile_lines(block)), flush=True)
    return 0


class _Profiled:
    """perf on the server's tree from its start to its stop, with the tree's CPU at both ends
    (so the profile's shares become CPU us per request over the requests it served)."""

    def __init__(self, args: argparse.Namespace, pid: Optional[int]) -> None:
        if pid is None:
            raise ServerError("--profile: the server has no pid to profile")
        self.sampler = Sampler(pid, tree=True)
        self.profiler = Profiler(args.profile, args.profile_frequency, args.profile_call_graph)
        self.profiler.attach(self.sampler.snapshot().pids)
        self.start_cpu_s = self.sampler.snapshot().cpu_s
        self.profiler.enable()
        print(f"loadbench serve: profiling with perf into {args.profile}", flush=True)
        self.cpu_s: Optional[float] = None

    def stop(self) -> None:
        self.cpu_s = self.sampler.snapshot().cpu_s - self.start_cpu_s
        self.profiler.stop()

    def finish(self, requests: int) -> dict:
        per_req = self.cpu_s * 1e6 / requests if self.cpu_s is not None and requests else None
        return self.profiler.finish(per_req)
