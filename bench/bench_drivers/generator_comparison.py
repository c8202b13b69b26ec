"""Generator comparison: loadbench, wrk, h2load --h1, hey, bombardier, oha and ab, each pinned
to CPU 1, against nginx and loadbench-server pinned to CPU 0 (one worker each).

Part 1 (keep-alive, plaintext): per cell each generator's req/s (its own exact response count
over its own measured window) and its OWN CPU per response: ru_utime+ru_stime from os.wait4()
on the generator process / the exact responses it reports. The server's CPU per response is
recorded beside it (/proc tree, read around the run).
Part 2 (connection setup): connection-per-request over http (wrk -H 'Connection: close',
loadbench --disable-keepalive, ...) and over https (full TLS handshakes: nginx without session
cache or tickets, loadbench-server --tls): each generator's CPU per new connection / handshake
beside the server's, cells where the generator's core was saturated flagged.
Part 3 (system calls): loadbench (and --before's build) and wrk under `strace -c -f` for a few
seconds against loadbench-server: calls per response (keep-alive, c=50) and per new connection /
full TLS handshake (connection per request, the setup part's c), start-up's calls left out.
Part 4 (HTTP/2, keep-alive): loadbench --h2 -p M vs h2load -m M (nghttp2's own client) and oha
--http2 -p M at c x m cells (default c=25 m=10, Zuri's setting, and c = 1/10/50 x m = 1/10),
against nginx http2 (TLS, ALPN h2), loadbench-server and h2o (h2c, prior knowledge): req/s and
generator CPU per response, median of the repeats.
Profiles (after every measured run; on when `perf record` works, --no-profiles to skip):
loadbench, loadbench-wolfssl and wrk (and --before's build) under `perf record -F 2000
--call-graph dwarf`, one connection per request over http and https (full handshakes) against
loadbench-server: the top entries (self %, shared object, symbol), the shares by shared object
and the inclusive time of the TLS library's exported functions and of the system calls.

    .venv/bin/python bench/generator_vs_peers.py                      # the issue's matrix (~40 min)
    .venv/bin/python bench/generator_vs_peers.py --before /path/to/old-venv/bin/python   # + an older build
    .venv/bin/python bench/generator_vs_peers.py -d 2 -r 1 -c 50       # a quick look
    .venv/bin/python bench/generator_vs_peers.py --only-h2 -d 2 -r 1 --h2-cells 25x10   # HTTP/2 smoke
    .venv/bin/python bench/generator_vs_peers.py --only-setup -d 5 -r 3 --generators loadbench,wrk,loadbench-wolfssl
        # issue 19: connection setup, its system calls per connection and the profiles, alone

Writes reports/generator-vs-peers.md and every run to reports/generator-vs-peers.jsonl.
A generator that is not installed is reported n/a, never dropped.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Optional

from loadbench.core import analysis
from loadbench.core.sampler import window

from . import generators as gl
from . import handshake_proof
from . import perf_profiles as profiles
from .checkout import peers_dir, reports_dir
from .environment_block import environment, machine_note
from .gate import add_gate_args, foreign_cores, gate_note, make_gate, outside_share, wait_quiet
from .generator_comparison_report import h2_report, open_loop_document, open_loop_report, report
from .jsonl import JsonlWriter, read_jsonl
from .peers import LaunchedPeer, PeerChoice, registry_choices, start_peers, stop_all
from .repeats import add_matrix_args
from .report_text import write_report
from .tcp_counters import tcp_counters, tcp_per_connection

# The report's servers, in its order: registry peers (bench/peers/peers.toml), whose labels there
# are the names --servers takes and the report prints.
SERVERS = ("nginx", "beast")
# The HTTP/2 part: nginx over TLS with ALPN h2; loadbench-server and h2o over h2c (prior knowledge).
# --h2-servers takes the registry's labels; the report prints "<label> <protocol>" ("nginx h2").
H2_SERVERS = (("nginx", "h2"), ("beast", "h2c"), ("h2o", "h2c"))


def known_servers(args: argparse.Namespace) -> dict[str, PeerChoice]:
    """--servers names (the registry's HTTP/1.1 labels of SERVERS) -> the server over http."""
    return {c.label: c for c in registry_choices([(p, "http") for p in SERVERS], args.peers_dir)}


def known_h2_servers(args: argparse.Namespace) -> dict[str, PeerChoice]:
    """--h2-servers names (the registry's labels: "nginx") -> the server as the report labels it
    ("nginx h2")."""
    names = registry_choices(H2_SERVERS, args.peers_dir)
    choices = registry_choices(H2_SERVERS, args.peers_dir, protocol_in_label=True)
    return {name.label: choice for name, choice in zip(names, choices)}


def parse_args(argv: Optional[list[str]] = None, repo: Optional[Path] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_matrix_args(p)
    p.add_argument(
        "--generators",
        default=",".join(
            g.name.split()[0] for g in gl.all_generators() if not getattr(g, "optional", False)
        ),
        help="comma-separated subset (names: loadbench,wrk,h2load,hey,bombardier,oha,ab; opt-in: "
        "loadbench-wolfssl, loadbench-rustls, loadbench-lean-tcp)",
    )
    p.add_argument(
        "--servers", help="HTTP/1.1 servers, comma-separated (default: nginx,loadbench-server)"
    )
    p.add_argument(
        "--setup-concurrency", type=int, default=20, help="connections in the setup part"
    )
    p.add_argument("--no-setup", action="store_true", help="skip the connection-setup part")
    p.add_argument(
        "--no-keepalive-part",
        action="store_true",
        help="skip the keep-alive part (and its system calls per response)",
    )
    p.add_argument("--no-h2-part", action="store_true", help="skip the HTTP/2 part")
    p.add_argument(
        "--no-syscalls", action="store_true", help="skip counting system calls (strace -c -f)"
    )
    p.add_argument(
        "--no-proof",
        action="store_true",
        help="skip checking which generators refuse a forged handshake signature (setup part)",
    )
    p.add_argument(
        "--syscall-generators",
        default="loadbench,loadbench-before,loadbench-wolfssl,loadbench-rustls,wrk",
        help="generators whose system calls are counted: per response with the keep-alive part, "
        "per new connection / handshake with the setup part (those in --generators)",
    )
    p.add_argument(
        "--syscall-concurrency", type=int, default=50, help="connections, keep-alive syscall count"
    )
    p.add_argument("--syscall-duration", type=int, default=3, help="seconds per strace run")
    p.add_argument(
        "--before",
        metavar="PYTHON",
        help="an interpreter holding another loadbench build (e.g. the engine before a redesign): "
        "measured as `loadbench-before` beside the installed one in the HTTP/1.1 parts",
    )
    p.add_argument(
        "--before-note",
        default="",
        help="what the --before build is (e.g. its commit), for the report",
    )
    p.add_argument(
        "--profiles",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="perf profiles of the generators, connection per request, after the measured runs "
        "(default: on when `perf record` works here)",
    )
    p.add_argument(
        "--profile-generators",
        default="loadbench,loadbench-before,loadbench-lean-tcp,loadbench-wolfssl,loadbench-rustls,wrk",
        help="generators profiled (those in --generators; loadbench-before with --before)",
    )
    p.add_argument(
        "--profile-duration",
        type=int,
        default=4,
        help=f"seconds per profiled run (the first {profiles.DELAY_MS} ms are not sampled)",
    )
    p.add_argument(
        "--open-loop",
        action="store_true",
        help="the open-loop part: loadbench (and --before's build) at fixed rates (--open-rates) "
        "and at fractions of its own closed-loop peak against each server (--open-fractions), "
        "beside the keep-alive part's closed loop",
    )
    p.add_argument(
        "--only-open-loop",
        action="store_true",
        help="only the keep-alive part (loadbench builds) and the open-loop part",
    )
    p.add_argument(
        "--open-rates", default="10000,50000", help="open-loop rates in requests per second"
    )
    p.add_argument(
        "--open-fractions",
        default="0.95",
        help="open-loop rates as fractions of loadbench's closed-loop peak against the server "
        "(the best median req/s of the keep-alive part, over a pool of that cell's connections)",
    )
    p.add_argument(
        "--open-pool", type=int, default=50, help="connections of the fixed-rate open-loop runs"
    )
    p.add_argument(
        "--open-generators",
        default="loadbench,loadbench-before,loadbench-no-batch-reads,loadbench-send-batch-1ms,oha,wrk2",
        help="generators in the open-loop part (those with an open loop: loadbench builds, oha)",
    )
    p.add_argument("--only-h2", action="store_true", help="only the HTTP/2 part")
    p.add_argument(
        "--only-setup",
        action="store_true",
        help="only the connection-setup part, its system calls per connection and the profiles",
    )
    p.add_argument(
        "--h2-cells",
        default="25x10,1x1,1x10,10x1,10x10,50x1,50x10",
        help="HTTP/2 cells as CONNECTIONSxSTREAMS, comma-separated",
    )
    p.add_argument(
        "--h2-servers",
        help="HTTP/2 servers: nginx (TLS, ALPN h2), loadbench-server and h2o (h2c) (default: all)",
    )
    p.add_argument("--h2-generators", default="loadbench,h2load,oha", help="HTTP/2 generators")
    p.add_argument("--server-cpu", type=int, default=0)
    p.add_argument("--generator-cpu", type=int, default=1)
    p.add_argument("--path", default="/plaintext")
    p.add_argument("--beast-bin", help="loadbench-server binary (default: the installed package's)")
    p.add_argument(
        "--out", default=str(reports_dir(repo) / "generator-vs-peers"), help="output stem"
    )
    add_gate_args(p)
    p.add_argument(
        "--report-only",
        action="store_true",
        help="measure nothing: rewrite STEM.md from STEM.jsonl (same -c/--generators/--servers)",
    )
    args = p.parse_args(argv)
    args.repo = repo
    args.peers_dir = peers_dir(repo)
    args.concurrencies = [int(c) for c in args.concurrencies.split(",")]
    args.generators = [g.strip() for g in args.generators.split(",")]
    if args.servers is None:
        args.servers = list(known_servers(args))
    else:
        args.servers = [s.strip() for s in args.servers.split(",")]
    args.h2_cells = [
        tuple(int(x) for x in cell.lower().split("x")) for cell in args.h2_cells.split(",") if cell
    ]
    if args.h2_servers is None:
        args.h2_servers = list(known_h2_servers(args))
    else:
        args.h2_servers = [s.strip() for s in args.h2_servers.split(",") if s.strip()]
    args.h2_generators = [g.strip() for g in args.h2_generators.split(",") if g.strip()]
    args.syscall_generators = [g.strip() for g in args.syscall_generators.split(",") if g.strip()]
    args.profile_generators = [g.strip() for g in args.profile_generators.split(",") if g.strip()]
    if args.only_h2 and args.only_setup:
        p.error("--only-h2 and --only-setup exclude each other")
    if args.only_h2:
        args.no_setup = args.no_keepalive_part = args.no_syscalls = True
        args.profiles = False
        args.generators = []
    if args.only_setup:
        args.no_setup, args.no_keepalive_part, args.no_h2_part = False, True, True
    args.open_generators = [g.strip() for g in args.open_generators.split(",") if g.strip()]
    args.open_rates = [float(r) for r in args.open_rates.split(",") if r.strip()]
    args.open_fractions = [float(f) for f in args.open_fractions.split(",") if f.strip()]
    if args.only_open_loop:
        args.open_loop = True
        args.no_setup = args.no_h2_part = args.no_syscalls = True
        args.profiles = False
        # the open-loop tools (opt-in variants included); loadbench-before comes from --before
        args.generators = [g for g in args.open_generators if g != "loadbench-before"]
    return args


def h2_choices(args: argparse.Namespace) -> list[PeerChoice]:
    """nginx over TLS with ALPN h2; loadbench-server and h2o over h2c (prior knowledge)."""
    known = known_h2_servers(args)
    unknown = [name for name in args.h2_servers if name not in known]
    if unknown:
        raise SystemExit(f"unknown HTTP/2 server {unknown[0]!r} ({', '.join(known)})")
    return [known[name] for name in args.h2_servers]


def server_choices(args: argparse.Namespace, https: bool) -> list[PeerChoice]:
    known = known_servers(args)
    unknown = [name for name in args.servers if name not in known]
    if unknown:
        raise SystemExit(f"unknown server {unknown[0]!r} ({', '.join(known)})")
    # a server keeps its HTTP/1.1 label over https: the report sets its two schemes side by side
    protocol = "https" if https else "http"
    return [replace(known[name], protocol=protocol) for name in args.servers]


def start(
    choices: list[PeerChoice], args: argparse.Namespace, env: dict, env_prefix: str = "Server "
) -> list[LaunchedPeer]:
    """Each server pinned to --server-cpu, one worker, through the registry (n/a in env when not)."""
    return start_peers(
        choices,
        [args.server_cpu],
        env,
        args.peers_dir,
        binary=args.beast_bin,
        env_prefix=env_prefix,
    )


def _attempt(record: dict, work: Callable[[], dict]) -> dict:
    """record + work()'s fields with status ok; n/a when the tool cannot do the mode, else FAIL."""
    try:
        return {**record, "status": "ok", **work()}
    except gl.UnsupportedMode as exc:
        return {**record, "status": "n/a", "reason": str(exc)}
    except (
        RuntimeError,
        ValueError,
        KeyError,
        StopIteration,
        OSError,
        subprocess.TimeoutExpired,
    ) as exc:
        return {**record, "status": "FAIL", "reason": f"{type(exc).__name__}: {exc}"[:1000]}


def measure(
    gen: gl.Generator,
    peer: LaunchedPeer,
    args: argparse.Namespace,
    part: str,
    c: int,
    repeat: int,
    keepalive: bool,
) -> dict:
    record: dict = {
        "part": part,
        "generator": gen.name,
        "server": peer.name,
        "scheme": "https" if peer.https else "http",
        "connections": c,
        "repeat": repeat,
    }
    if part == "h2":
        record["streams"] = getattr(gen, "streams", 1)

    def work() -> dict:
        before, tcp_before = peer.snapshot(), tcp_counters()
        child, result = gen.run(
            peer.url(args.path), c, args.duration, keepalive, [args.generator_cpu]
        )
        tcp_after = tcp_counters()
        server = window(before, peer.snapshot(), result.responses)
        server_cpu = server["cpu_s"]
        per = result.responses or None
        # Connection-per-request: one new connection per response unless the tool counted them itself.
        new_connections = None if keepalive else (result.connections or result.responses)
        fields = {
            "argv": shlex.join(child.argv),
            "responses": result.responses,
            "non_2xx": result.non_2xx,
            "errors": result.errors,
            "duration_s": result.duration_s,
            "rps": result.rps,
            "new_connections": new_connections,
            "gen_cpu_s": child.cpu_s,
            "gen_user_s": child.user_s,
            "gen_sys_s": child.sys_s,
            "wall_s": child.wall_s,
            "gen_busy": child.busy,
            "gen_cpu_us_per_resp": child.cpu_s / per * 1e6 if per else None,
            "server_cpu_s": server_cpu,
            "server_busy": server_cpu / server["window_s"],
            "server_cpu_us_per_resp": server["cpu_us_per_req"],
            "server_window": server,
            "foreign_cores": foreign_cores(server, child.cpu_s),
            "outside_share": outside_share(server, child.cpu_s),
            "load1": os.getloadavg()[0],
            "latency_us": result.latency_us,
            "extra": result.extra,
            "raw_output": (
                child.stdout[-4000:]
                + ("\n[stderr]\n" + child.stderr[-2000:] if child.stderr else "")
            ),
        }
        if new_connections:
            fields["gen_cpu_us_per_conn"] = child.cpu_s / new_connections * 1e6
            fields["server_cpu_us_per_conn"] = server_cpu / new_connections * 1e6
            fields["conn_per_s"] = new_connections / result.duration_s
            # What went over loopback per connection, by the kernel's count (both ends together):
            # checks each tool's TCP exchange with counters no one here wrote.
            fields["tcp_per_conn"] = tcp_per_connection(tcp_before, tcp_after, new_connections)
            fields["tcp_segments_per_conn"] = fields["tcp_per_conn"].get("segments")
            fields["tcp_resets_per_conn"] = fields["tcp_per_conn"].get("resets")
            if (
                result.extra.get("self_cpu_s") is not None
            ):  # loadbench's engine threads over the window alone
                fields["gen_engine_us_per_conn"] = (
                    result.extra["self_cpu_s"] / new_connections * 1e6
                )
        return fields

    return _attempt(record, work)


def describe(record: dict) -> str:
    if record["part"] == "profile":
        return profiles.describe(record)
    if record["part"] == "proof":
        return handshake_proof.describe(record)
    if record["part"] == "syscalls" and record["status"] != "ok":
        return (
            f"  syscalls  {record['scheme']:<5} {record['generator']:<16} {record['status']}: "
            f"{record['reason'][:160]}"
        )
    if record["part"] == "syscalls":
        unit = "resp" if record.get("mode", "keepalive") == "keepalive" else "conn"
        noun = (
            "response"
            if unit == "resp"
            else ("handshake" if record["scheme"] == "https" else "new connection")
        )
        top = ", ".join(f"{k} {v:.2f}" for k, v in list(record[f"per_{unit}_by_call"].items())[:4])
        return (
            f"  syscalls  {record['scheme']:<5} {record['generator']:<16} {record[f'calls_per_{unit}']:.2f} "
            f"calls per {noun} ({record['responses']} responses under strace; {top})"
        )
    if record["part"] == "startup":
        return f"  startup   {record['generator']}: {record['startup_cpu_s'] * 1e3:.0f} ms CPU for a one-request run"
    cell = f"c={record['connections']}" + (f" m={record['streams']}" if "streams" in record else "")
    head = (
        f"  {record['part']:<9} r{record['repeat']} {cell:<10} "
        f"{record['scheme']:<5} {record['server']:<16} {record['generator']:<12}"
    )
    if record["status"] != "ok":
        return f"{head} {record['status']}: {record['reason'][:160]}"
    return (
        f"{head} {record['rps']:>9,.0f} req/s  gen {record['gen_cpu_us_per_resp'] or 0:6.2f} us/resp "
        f"(busy {record['gen_busy']:.2f})  server {record['server_cpu_us_per_resp'] or 0:6.2f} us/resp "
        f"(busy {record['server_busy']:.2f})  others {record['foreign_cores'] or 0:.2f} cores  "
        f"err {record['errors']} non2xx {record['non_2xx']}"
    )


def chosen_generators(args: argparse.Namespace) -> list[gl.Generator]:
    chosen = [g for g in gl.all_generators() if g.name.split()[0] in args.generators]
    if args.before and not args.only_h2:
        chosen.insert(1, gl.LoadbenchBuild(args.before, "loadbench-before"))
    return chosen


def _per(calls: dict[str, int], n: int) -> dict[str, float]:
    return {k: v / n for k, v in sorted(calls.items(), key=lambda kv: -kv[1]) if v > 0}


def count_syscalls(
    gen: gl.Generator, peer: LaunchedPeer, args: argparse.Namespace, keepalive: bool = True
) -> dict:
    """System calls per response (keep-alive) or per new connection / full handshake (setup)."""
    c = args.syscall_concurrency if keepalive else args.setup_concurrency
    record: dict = {
        "part": "syscalls",
        "mode": "keepalive" if keepalive else "setup",
        "generator": gen.name,
        "server": peer.name,
        "scheme": "https" if peer.https else "http",
        "connections": c,
        "repeat": 1,
    }

    def work() -> dict:
        result, calls, startup = gen.syscalls(
            peer.url(args.path), c, args.syscall_duration, [args.generator_cpu], keepalive
        )
        # A one-request run's calls are start-up and shutdown (and its one connection); what is
        # left is the load's.
        load = {name: n - startup.get(name, 0) for name, n in calls.items()}
        one = 1 if startup else 0
        responses = max(result.responses - one, 1)
        fields = {
            "responses": result.responses,
            "errors": result.errors,
            "calls": sum(calls.values()),
            "startup_calls": sum(startup.values()),
            "calls_per_resp": sum(load.values()) / responses,
            "per_resp_by_call": _per(load, responses),
            "strace_calls": calls,
            "strace_startup_calls": startup,
        }
        if not keepalive:
            opened = result.connections or result.responses
            conns = max(opened - one, 1)
            fields.update(
                new_connections=opened,
                calls_per_conn=sum(load.values()) / conns,
                per_conn_by_call=_per(load, conns),
            )
        return fields

    return _attempt(record, work)


def profile(gen: gl.Generator, peer: LaunchedPeer, args: argparse.Namespace) -> dict:
    record = {
        "part": "profile",
        "mode": "setup",
        "generator": gen.name,
        "server": peer.name,
        "scheme": "https" if peer.https else "http",
        "connections": args.setup_concurrency,
        "repeat": 1,
    }
    return _attempt(
        record,
        lambda: profiles.record(
            gen,
            peer.url(args.path),
            args.setup_concurrency,
            args.profile_duration,
            [args.generator_cpu],
        ),
    )


def run_profiles(
    args: argparse.Namespace, runnable: list[gl.Generator], env: dict, keep: Callable[[dict], None]
) -> None:
    """After every measured run, on servers of their own: http and https (full handshakes)
    connection-per-request runs of each profiled generator under perf record."""
    gens = [g for g in runnable if g.name in args.profile_generators]
    if not gens:
        return
    peers = start(
        registry_choices([("beast", p) for p in ("http", "https")], args.peers_dir), args, env
    )
    try:
        for peer in peers:
            for gen in gens:
                keep(profile(gen, peer, args))
    finally:
        stop_all(peers)


def open_rates(args: argparse.Namespace, records: list[dict], peer: LaunchedPeer) -> list[tuple]:
    """(rate, pool, what it is) for one server: the fixed rates over --open-pool connections, and
    fractions of loadbench's own closed-loop peak against it over the peak cell's connections (the
    sweep's model: every server offered the pool its capacity was measured with)."""
    out = [(rate, args.open_pool, f"{rate:g}/s") for rate in args.open_rates]
    by_c: dict[int, list[float]] = {}
    for r in records:
        if (r.get("part"), r.get("generator"), r.get("server"), r.get("status")) == (
            "keepalive",
            "loadbench",
            peer.name,
            "ok",
        ):
            by_c.setdefault(r["connections"], []).append(r["rps"])
    if by_c:
        medians = {c: analysis.median(v) for c, v in by_c.items()}
        c = max(medians, key=lambda k: medians[k])
        for f in args.open_fractions:
            out.append((round(medians[c] * f), c, f"{100 * f:g} % of the closed-loop peak"))
    return out


def open_loop_part(
    args: argparse.Namespace,
    runnable: list[gl.Generator],
    peers: list[LaunchedPeer],
    records: list[dict],
    gate,
    waited: dict,
    keep: Callable[[dict], None],
) -> None:
    """The open-loop tools at each rate, repeats outermost, tools innermost."""
    builds = [g for g in runnable if g.has_open_loop and g.name in args.open_generators]
    for repeat in range(1, args.repeats + 1):
        for peer in peers:
            for rate, pool, what in open_rates(args, records, peer):
                for gen in builds:
                    gen.rate = rate
                    try:
                        waited["gate"] = wait_quiet(gate)
                        record = measure(gen, peer, args, "open", pool, repeat, True)
                    finally:
                        gen.rate = None
                    record.update(rate=rate, rate_basis=what)
                    keep(record)


def run(args: argparse.Namespace) -> tuple[list[dict], dict, list[gl.Generator]]:
    chosen = chosen_generators(args)
    env = environment()
    gate = make_gate(args)
    first = wait_quiet(gate)
    load_at_start = first["load1_at_start"]
    for gen in chosen:
        env[f"Generator {gen.name}"] = (
            gen.version() if gen.available else f"n/a ({gen.missing_reason})"
        )
        if gen.name == "loadbench-before" and args.before_note:
            env[f"Generator {gen.name}"] += f" - {args.before_note}"
    runnable = [g for g in chosen if g.available]
    if args.profiles is not False:
        why_not = profiles.unavailable()
        if why_not and args.profiles:
            raise SystemExit(f"--profiles: {why_not}")
        args.profiles = why_not is None
        env["Profiles"] = why_not or f"`{profiles.command()}` ({profiles.perf_version()})"
    out = Path(args.out)
    jsonl = JsonlWriter(out.with_suffix(".jsonl"))
    records: list[dict] = []
    waited: dict = {}  # the gate's verdict before the measurement being kept

    def keep(record: dict) -> None:
        if "gate" in waited:
            record["gate"], record["load1_at_start"] = (
                dict(waited["gate"]),
                waited["gate"]["load1_at_start"],
            )
        jsonl.write(record)
        records.append(record)
        print(describe(record), flush=True)

    peers: list[LaunchedPeer] = []
    try:
        choices = server_choices(args, https=False)
        if not args.no_setup:
            choices += server_choices(args, https=True)
        peers.extend(start(choices, args, env))
        for peer in peers:
            print(
                f"{peer.name} ({'https' if peer.https else 'http'}): pid {peer.pid} "
                f"on CPU {args.server_cpu}",
                flush=True,
            )
        http_peers = [p for p in peers if not p.https]
        for gen in runnable:
            if http_peers:
                startup = gen.startup_cpu_s(http_peers[0].url(args.path), [args.generator_cpu])
                if startup is not None:
                    keep(
                        {
                            "part": "startup",
                            "generator": gen.name,
                            "server": http_peers[0].name,
                            "scheme": "http",
                            "connections": 1,
                            "repeat": 0,
                            "status": "ok",
                            "startup_cpu_s": startup,
                        }
                    )
        # Repeats outermost, generators innermost: machine drift hits every tool alike.
        if not args.no_keepalive_part:
            for repeat in range(1, args.repeats + 1):
                for c in args.concurrencies:
                    for peer in http_peers:
                        for gen in runnable:
                            waited["gate"] = wait_quiet(gate)
                            keep(measure(gen, peer, args, "keepalive", c, repeat, True))
        if args.open_loop:
            open_loop_part(args, runnable, http_peers, records, gate, waited, keep)
        counted = (
            [g for g in runnable if g.name in args.syscall_generators]
            if not args.no_syscalls
            else []
        )
        beast = [p for p in peers if p.name.startswith("loadbench-server")]
        if not args.no_keepalive_part:
            for peer in ([p for p in beast if not p.https] or http_peers)[:1]:
                for gen in counted:
                    waited["gate"] = wait_quiet(gate)
                    keep(count_syscalls(gen, peer, args))
        if not args.no_setup:
            for repeat in range(1, args.repeats + 1):
                for peer in peers:
                    for gen in runnable:
                        waited["gate"] = wait_quiet(gate)
                        keep(
                            measure(gen, peer, args, "setup", args.setup_concurrency, repeat, False)
                        )
            for peer in beast:  # per new connection (http) and per full handshake (https)
                for gen in counted:
                    waited["gate"] = wait_quiet(gate)
                    keep(count_syscalls(gen, peer, args, keepalive=False))
            if not args.no_proof and any(p.https for p in peers):
                handshake_proof.check(runnable, [args.generator_cpu], keep, args.repo)
        if not args.no_h2_part:
            stop_all(peers)
            peers.clear()
            peers.extend(start(h2_choices(args), args, env, env_prefix="HTTP/2 server "))
            h2_gens = [g for g in gl.h2_generators() if g.name.split()[0] in args.h2_generators]
            for gen in h2_gens:
                env[f"HTTP/2 generator {gen.name}"] = (
                    gen.version() if gen.available else f"n/a ({gen.missing_reason})"
                )
            for repeat in range(1, args.repeats + 1):
                for c, m in args.h2_cells:
                    for peer in peers:
                        for gen in h2_gens:
                            if not gen.available:
                                continue
                            gen.streams = m
                            waited["gate"] = wait_quiet(gate)
                            keep(measure(gen, peer, args, "h2", c, repeat, True))
        stop_all(peers)
        peers.clear()
        if args.profiles:
            waited.clear()  # no gate: a profile is a share of the tool's own CPU, not a measurement
            run_profiles(args, runnable, env, keep)
    finally:
        stop_all(peers)
        env["Load average at start"] += f" - {machine_note(load_at_start, first)}"
        env["Load gate"] = gate_note(first, records)
        jsonl.write({"record": "environment", "environment": env, "command": args.command})
        jsonl.close()
    return records, env, chosen


def main(argv: Optional[list[str]] = None, repo: Optional[Path] = None) -> int:
    """bench/generator_vs_peers.py: ``repo`` is the checkout (bench/peers, reports/, tests/)."""
    args = parse_args(argv, repo)
    given = sys.argv[1:] if argv is None else argv
    args.command = "python3 bench/generator_vs_peers.py" + (
        " " + shlex.join(given) if given else ""
    )
    started = time.monotonic()
    if args.report_only:
        records, env, command = read_jsonl(Path(args.out).with_suffix(".jsonl"))
        chosen = chosen_generators(args)
    else:
        records, env, chosen = run(args)
        command = args.command
    # The HTTP/2 part has its own table (its cells are c x m); the HTTP/1.1 sections never mix it in.
    if args.only_open_loop:
        write_report(
            Path(args.out).with_suffix(".md"), open_loop_document(records, env, args, command)
        )
        print(f"generator_vs_peers: wrote {args.out}.md and .jsonl")
        return 0
    text = report(
        [r for r in records if r.get("part") not in ("h2", "open")], env, args, command, chosen
    )
    if any(r.get("part") == "open" for r in records):
        text += "\n" + open_loop_report(records, args)
    if not getattr(args, "no_h2_part", False):
        text += "\n" + h2_report(records, args)
    write_report(Path(args.out).with_suffix(".md"), text)
    print(text)
    print(
        f"generator_vs_peers: done in {time.monotonic() - started:.0f} s; wrote {args.out}.md and .jsonl"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
