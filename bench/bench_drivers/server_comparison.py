"""Server baseline: wrk (pinned to CPU 1) against loadbench-server, nginx and node:http
(each pinned to CPU 0, one worker), plaintext, keep-alive.

Per cell it records req/s (wrk's exact response count / wrk's exact measured window) and the
server's CPU us per response: utime+stime of the server's whole process tree read from /proc
right before and right after the wrk run, divided by wrk's exact response count.

    .venv/bin/python bench/server_vs_peers.py                    # the issue's matrix (~7 min)
    .venv/bin/python bench/server_vs_peers.py -d 2 -r 1 -c 10,50  # a quick look

Writes reports/server-baseline.md and every repeat to reports/server-baseline.jsonl.

`--setup` adds the connection-setup part: wrk `-H 'Connection: close'` (one new connection per
response) over http and over https (full TLS handshakes: nginx without session cache and tickets,
loadbench-server `--no-tls-resumption`), the server's CPU us per new connection / handshake.

`--protocol h2` runs the HTTP/2 part instead (h2load against loadbench-server h2c/h2, nginx
http2, h2o h2c/h2, node:http2; see bench_drivers.server_comparison_h2): reports/server-h2.md/.jsonl.

Every server is an entry of the peer registry (bench/peers/peers.toml) started with
loadbench.sweep.targets.launch; the registry also says the label the report prints for it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Optional

from loadbench.core.sampler import window
from loadbench.report import markdown
from loadbench.report.markdown import best_table, fmt_number

from . import server_comparison_h2
from .checkout import peers_dir, reports_dir
from .environment_block import environment, machine_note
from .gate import (
    add_gate_args,
    foreign_cores,
    gate_note,
    kept,
    make_gate,
    measure_uncontended,
    outside_share,
    wait_quiet,
)
from .generators import Wrk
from .jsonl import JsonlWriter, read_jsonl
from .peers import LaunchedPeer, PeerChoice, registry_choices, start_peers, stop_all
from .repeats import Summary, add_matrix_args, summarize
from .report_text import report_head, versus, write_report
from .syscalls import parse_strace_counts
from .tcp_counters import tcp_counters, tcp_per_connection

BUSY_LIMIT = 0.95  # a process using >= 95 % of its one pinned core is saturated


def parse_args(argv: Optional[list[str]] = None, repo: Optional[Path] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_matrix_args(p)
    p.add_argument(
        "--warmup", type=int, default=2, help="seconds of unrecorded load per server first"
    )
    p.add_argument(
        "--protocol",
        choices=["h1", "h2"],
        default="h1",
        help="h1: wrk, HTTP/1.1 (default); h2: h2load, HTTP/2 (bench_drivers.server_comparison_h2)",
    )
    p.add_argument(
        "--servers",
        default=None,
        help="comma-separated (h1 default: loadbench-server,nginx,node:http; h2 default: "
        "loadbench-server h2c,loadbench-server h2,nginx h2,h2o h2c,h2o h2,node:http2 h2c)",
    )
    p.add_argument(
        "--h2-cells",
        default="1x10,25x10,50x10",
        help="--protocol h2: CxM cells, C connections x M concurrent streams (default 1x10,25x10,50x10)",
    )
    p.add_argument(
        "--setup",
        action="store_true",
        help="also measure connection setup (a new connection / TLS handshake per request)",
    )
    p.add_argument(
        "--setup-concurrency", type=int, default=20, help="connections in the setup part"
    )
    p.add_argument(
        "--no-syscalls",
        action="store_true",
        help="--setup: skip counting the servers' system calls (strace -c -f -p, after the measured runs)",
    )
    p.add_argument("--syscall-duration", type=int, default=3, help="seconds of wrk per strace run")
    p.add_argument("--server-cpu", type=int, default=0)
    p.add_argument("--generator-cpu", type=int, default=1)
    p.add_argument("--path", default="/plaintext")
    p.add_argument("--beast-bin", help="loadbench-server binary (default: the installed package's)")
    p.add_argument(
        "--before-bin",
        help="also measure this loadbench-server binary (an older build), as the keep-alive row "
        "'loadbench-server (before)', side by side with the others in the same run",
    )
    p.add_argument(
        "--out",
        default=None,
        help="output stem: STEM.md and STEM.jsonl (default reports/server-baseline, h2: reports/server-h2)",
    )
    add_gate_args(p)
    p.add_argument(
        "--report-only",
        action="store_true",
        help="measure nothing: rewrite STEM.md from STEM.jsonl (same -c as the run)",
    )
    args = p.parse_args(argv)
    args.repo = repo
    args.peers_dir = peers_dir(repo)
    args.concurrencies = [int(c) for c in args.concurrencies.split(",")]
    if args.servers is not None:
        args.servers = [s.strip() for s in args.servers.split(",")]
    elif args.protocol == "h1":
        args.servers = list(known_servers(args))
    if args.out is None and args.protocol == "h1":
        args.out = str(reports_dir(repo) / "server-baseline")
    return args


# The report's servers, in its order: registry peers (bench/peers/peers.toml), whose labels there
# are the names --servers takes and the report prints.
SERVERS = ("beast", "nginx", "node")
SETUP_SERVERS = ("beast", "nginx")  # the connection-setup part: over http and https
BEFORE = "loadbench-server (before)"  # --before-bin: the beast peer, another binary


def known_servers(args: argparse.Namespace) -> dict[str, PeerChoice]:
    """--servers names (the registry's HTTP/1.1 labels of SERVERS) -> the server over http."""
    return {c.label: c for c in registry_choices([(p, "http") for p in SERVERS], args.peers_dir)}


def peer_choices(args: argparse.Namespace) -> list[PeerChoice]:
    known = known_servers(args)
    unknown = [name for name in args.servers if name not in known]
    if unknown:
        raise SystemExit(
            f"server_vs_peers: unknown server(s) {', '.join(unknown)} (known: {', '.join(known)})"
        )
    choices = [known[name] for name in args.servers]
    if args.before_bin:
        choices.insert(1, PeerChoice(BEFORE, "beast", "http"))
    return choices


def setup_choices(args: argparse.Namespace, https: bool) -> list[PeerChoice]:
    protocol = "https" if https else "http"
    known = known_servers(args)
    # a server keeps its HTTP/1.1 label over https: the report sets its two schemes side by side
    choices = [
        replace(known[name], protocol=protocol)
        for name in args.servers
        if name in known and known[name].peer in SETUP_SERVERS
    ]
    if args.before_bin:
        choices.insert(1, PeerChoice(BEFORE, "beast", protocol))
    return choices


def start(choices: list[PeerChoice], args: argparse.Namespace, env: dict) -> list[LaunchedPeer]:
    """Each server pinned to --server-cpu, one worker, through the registry (n/a in env when not);
    the --before-bin row runs that binary."""
    running = []
    for choice in choices:
        binary = args.before_bin if choice.label == BEFORE else args.beast_bin
        running += start_peers([choice], [args.server_cpu], env, args.peers_dir, binary=binary)
    return running


def measure(
    peer: LaunchedPeer,
    wrk: Wrk,
    args: argparse.Namespace,
    c: int,
    repeat: int,
    keepalive: bool = True,
) -> dict:
    before, tcp_before = peer.snapshot(), tcp_counters()
    child, result = wrk.run(peer.url(args.path), c, args.duration, keepalive, [args.generator_cpu])
    tcp_after = tcp_counters()
    server = window(before, peer.snapshot(), result.responses)
    return {
        "server": peer.name,
        "connections": c,
        "repeat": repeat,
        "path": args.path,
        "responses": result.responses,
        "duration_s": result.duration_s,
        "rps": result.rps,
        "non_2xx": result.non_2xx,
        "errors": result.errors,
        "server_cpu_s": server["cpu_s"],
        "server_cpu_us_per_req": server["cpu_us_per_req"],
        "server_busy": server["cpu_s"] / server["window_s"],
        "server_window": server,
        "wrk_cpu_s": child.cpu_s,
        "wrk_busy": child.busy,
        "wall_s": child.wall_s,
        "foreign_cores": foreign_cores(server, child.cpu_s),
        "outside_share": outside_share(server, child.cpu_s),
        "latency_us": result.latency_us,
        "load1": os.getloadavg()[0],
        "argv": shlex.join(child.argv),
        "wrk_stdout": child.stdout,
        # Connection: close - one new connection (https: one full handshake) per response
        **(
            {}
            if keepalive
            else {
                "part": "setup",
                "scheme": "https" if peer.https else "http",
                "server_cpu_us_per_conn": server["cpu_s"] / result.responses * 1e6
                if result.responses
                else None,
                "wrk_cpu_us_per_conn": child.cpu_s / result.responses * 1e6
                if result.responses
                else None,
                "conn_per_s": result.rps,
                # The kernel's own count of what each connection took on loopback (both ends).
                "tcp_segments_per_conn": tcp_per_connection(
                    tcp_before, tcp_after, result.responses
                ).get("segments"),
            }
        ),
    }


def run_setup(
    args: argparse.Namespace, wrk: Wrk, env: dict, gate, jsonl, records: list[dict]
) -> None:
    """The connection-setup part: per scheme, the servers started with that scheme, interleaved."""
    for https in (False, True):
        peers = start(setup_choices(args, https), args, env)
        try:
            for repeat in range(1, args.repeats + 1):
                for peer in peers:
                    record = measure_uncontended(
                        gate,
                        args.contended_retries,
                        partial(
                            measure,
                            peer,
                            wrk,
                            args,
                            args.setup_concurrency,
                            repeat,
                            keepalive=False,
                        ),
                        jsonl,
                        records,
                    )
                    print(
                        f"  setup repeat {repeat} {record['scheme']:<5} {peer.name:<17} "
                        f"{record['conn_per_s']:>8,.0f} conn/s  server {record['server_cpu_us_per_conn'] or 0:7.1f} "
                        f"us/conn  wrk {record['wrk_cpu_us_per_conn'] or 0:7.1f} us/conn",
                        flush=True,
                    )
        finally:
            stop_all(peers)


def count_server_syscalls(
    peer: LaunchedPeer, wrk: Wrk, args: argparse.Namespace, keepalive: bool
) -> dict:
    """The server's system calls per response under wrk (setup: one new connection per response),
    counted by `strace -c -f` attached to its whole process tree. strace slows the server, so this
    runs apart from the measured runs and only its counts are used."""
    with tempfile.TemporaryDirectory(prefix="bench-server-strace-") as tmp:
        table = Path(tmp) / "strace.txt"
        # The tree's members as the sampler finds them (nginx: master and worker).
        attach = [arg for pid in peer.snapshot().pids for arg in ("-p", str(pid))]
        tracer = subprocess.Popen(
            ["strace", "-c", "-f", "-o", str(table), *attach],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            time.sleep(1.0)  # attached to every thread before the load starts
            _, result = wrk.run(
                peer.url(args.path),
                args.setup_concurrency,
                args.syscall_duration,
                keepalive,
                [args.generator_cpu],
            )
        finally:
            tracer.send_signal(signal.SIGINT)
            _, err = tracer.communicate(timeout=60)
        calls = parse_strace_counts(table.read_text() if table.exists() else err)
    n = max(result.responses, 1)
    return {
        "part": "server_syscalls",
        "mode": "keepalive" if keepalive else "setup",
        "server": peer.name,
        "scheme": "https" if peer.https else "http",
        "connections": args.setup_concurrency,
        "responses": result.responses,
        "errors": result.errors,
        "calls": sum(calls.values()),
        "calls_per_resp": sum(calls.values()) / n,
        "per_resp_by_call": {
            name: count / n for name, count in sorted(calls.items(), key=lambda kv: -kv[1])
        },
        "strace_calls": calls,
    }


def run_server_syscalls(args: argparse.Namespace, wrk: Wrk, jsonl, records: list[dict]) -> None:
    """Per plain-http server: calls per new connection, and per keep-alive response beside it."""
    peers = start(setup_choices(args, False), args, {})
    try:
        for peer in peers:
            for keepalive in (False, True):
                try:
                    record = count_server_syscalls(peer, wrk, args, keepalive)
                except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as exc:
                    print(f"  strace {peer.name}: not counted ({exc})", file=sys.stderr, flush=True)
                    continue
                jsonl.write(record)
                records.append(record)
                print(
                    f"  strace {record['mode']:<9} {peer.name:<17} {record['calls_per_resp']:6.2f} calls/response",
                    flush=True,
                )
    finally:
        stop_all(peers)


def syscall_lines(records: list[dict]) -> list[str]:
    counted = [r for r in records if r.get("part") == "server_syscalls"]
    if not counted:
        return []
    rows = []
    for r in counted:
        top = ", ".join(
            f"{name} {per:.2f}" for name, per in list(r["per_resp_by_call"].items())[:7]
        )
        what = "per new connection" if r["mode"] == "setup" else "per keep-alive response"
        rows.append(
            f"| {r['server']} | {what} | {r['calls_per_resp']:.2f} | {r['responses']:,} | {top} |"
        )
    return [
        "## The servers' system calls (strace -c -f on the server's process tree)",
        "",
        f"wrk c = {counted[0]['connections']}, plain http; `-H 'Connection: close'` for one new connection "
        "per response. Counted in separate runs after the measured ones (strace slows the server); all calls "
        "of the window divided by wrk's responses.",
        "",
        "| Server | | system calls | responses (under strace) | the most frequent, per response |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]


def run(args: argparse.Namespace) -> tuple[list[dict], dict]:
    wrk = Wrk()
    if not wrk.available:
        raise SystemExit("server_vs_peers: wrk is not installed (bash bench/install-peers.sh)")
    choices = peer_choices(args)
    env = environment()
    env["Load generator"] = wrk.version()
    gate = make_gate(args)
    first = wait_quiet(gate)  # before any server starts: the machine as we found it
    load_at_start = first["load1_at_start"]
    out = Path(args.out)
    jsonl = JsonlWriter(out.with_suffix(".jsonl"))
    records: list[dict] = []
    peers = start(choices, args, env)
    try:
        for peer in peers:
            print(
                f"{peer.name}: pid {peer.pid} on CPU {args.server_cpu}, {peer.url(args.path)}",
                flush=True,
            )
            if args.warmup > 0:
                wrk.run(peer.url(args.path), 10, args.warmup, True, [args.generator_cpu])
        # Repeats outermost, servers innermost: slow drift of the machine hits every server alike.
        for repeat in range(1, args.repeats + 1):
            for c in args.concurrencies:
                for peer in peers:
                    record = measure_uncontended(
                        gate,
                        args.contended_retries,
                        partial(measure, peer, wrk, args, c, repeat),
                        jsonl,
                        records,
                    )
                    print(
                        f"  repeat {repeat} c={c:<4} {peer.name:<17} {record['rps']:>10,.0f} req/s "
                        f"{record['server_cpu_us_per_req']:>7.2f} us/req  server busy {record['server_busy']:.2f}"
                        f"  wrk busy {record['wrk_busy']:.2f}  others {record['foreign_cores'] or 0:.2f} cores",
                        flush=True,
                    )
    finally:
        stop_all(peers)
    try:
        if args.setup:
            run_setup(args, wrk, env, gate, jsonl, records)
            if not args.no_syscalls and shutil.which("strace"):
                run_server_syscalls(args, wrk, jsonl, records)
    finally:
        env["Load average at start"] += f" - {machine_note(load_at_start, first)}"
        env["Load gate"] = gate_note(first, records)
        jsonl.write({"record": "environment", "environment": env, "command": args.command})
        jsonl.close()
    return records, env


def cell(records: list[dict], server: str, c: int, key: str) -> Optional[Summary]:
    def value(r: dict) -> Optional[float]:
        return r["latency_us"].get(key[4:]) if key.startswith("lat_") else r[key]

    return summarize(
        value(r)
        for r in records
        if r["server"] == server and r["connections"] == c and r.get("part") != "setup"
    )


def setup_lines(records: list[dict], servers: list[str]) -> list[str]:
    """The connection-setup part: server CPU per new connection / handshake (median), per scheme."""
    setup = [r for r in records if r.get("part") == "setup"]
    if not setup:
        return []
    rows = []
    for server in servers:
        row: list = [server]
        for scheme in ("http", "https"):
            for key in (
                "conn_per_s",
                "server_cpu_us_per_conn",
                "wrk_cpu_us_per_conn",
                "tcp_segments_per_conn",
            ):
                s = summarize(
                    r.get(key) for r in setup if r["server"] == server and r["scheme"] == scheme
                )
                row.append(None if s is None else s.median)
        if any(v is not None for v in row[1:]):
            rows.append(row)
    header = [
        "Server",
        "http conn/s",
        "http server us/conn",
        "http wrk us/conn",
        "http TCP segments/conn",
        "https handshakes/s",
        "https server us/handshake",
        "https wrk us/handshake",
        "https TCP segments/conn",
    ]
    lowest = [False, True, True, True, False, True, True, True]
    return [
        "## Connection setup: server CPU us per new connection / full TLS handshake (median)",
        "",
        f"wrk `-H 'Connection: close'`, c = {setup[0]['connections']}: one new connection per response; "
        "https: every handshake a full one (nginx without session cache and tickets, loadbench-server "
        "`--no-tls-resumption`). A wrk figure above the server's means wrk, not the server, set the rate. "
        "TCP segments: sent per new connection by both ends together, from the kernel's own counters "
        "(/proc/net/snmp `Tcp: OutSegs`, as `nstat` shows it) over each run.",
        "",
        best_table(header, rows, lowest, [(0, 1, 1, 2)[i % 4] for i in range(8)]),
        "",
    ]


def report(records: list[dict], env: dict, args: argparse.Namespace, command: str) -> str:
    counted, records = records, kept(r for r in records if r.get("part") != "server_syscalls")
    # The measured servers in run order (--before-bin adds its row).
    servers, concs = list(dict.fromkeys(r["server"] for r in records)), args.concurrencies
    header = ["Server"] + [f"c = {c}" for c in concs]

    def table(key: str, lowest: bool, digits: int, scale: float = 1.0) -> str:
        rows = []
        for c_server in servers:
            medians = []
            for c in concs:
                s = cell(records, c_server, c, key)
                medians.append(s.median * scale if s else None)
            rows.append([c_server] + medians)
        return best_table(header, rows, lowest, digits)  # the best server per concurrency in bold

    def spread_table() -> str:
        rows = []
        for server in servers:
            row = [server]
            for c in concs:
                rps, cpu = (
                    cell(records, server, c, "rps"),
                    cell(records, server, c, "server_cpu_us_per_req"),
                )
                row.append(
                    f"{fmt_number(rps.low)}-{fmt_number(rps.high)} ({rps.spread_pct:.1f} %) / "
                    f"{cpu.low:.2f}-{cpu.high:.2f} ({cpu.spread_pct:.1f} %)"
                    if rps and cpu
                    else "n/a"
                )
            rows.append(row)
        return markdown.table(header, rows)

    def busy_table() -> str:
        rows = []
        for server in servers:
            row = [server]
            for c in concs:
                sb, wb = (
                    cell(records, server, c, "server_busy"),
                    cell(records, server, c, "wrk_busy"),
                )
                row.append(f"{sb.median:.2f} / {wb.median:.2f}" if sb and wb else "n/a")
            rows.append(row)
        return markdown.table(header, rows)

    def foreign_table() -> str:
        rows = []
        for server in servers:
            row = [server]
            for c in concs:
                f = cell(records, server, c, "foreign_cores")
                row.append(f"{f.median:.2f} (max {f.high:.2f})" if f else "n/a")
            rows.append(row)
        return markdown.table(header, rows)

    def headline() -> list[str]:
        lines = []
        for c in concs:
            beast = cell(records, "loadbench-server", c, "server_cpu_us_per_req")
            nginx = cell(records, "nginx", c, "server_cpu_us_per_req")
            beast_rps, nginx_rps = (
                cell(records, "loadbench-server", c, "rps"),
                cell(records, "nginx", c, "rps"),
            )
            if not (beast and nginx and beast_rps and nginx_rps):
                lines.append(f"- c = {c}: n/a")
                continue
            lines.append(
                f"- c = {c}: "
                + versus("loadbench-server", beast.median, "nginx", nginx.median)
                + f" (req/s: {fmt_number(beast_rps.median)} vs {fmt_number(nginx_rps.median)})"
            )
        for c in concs:  # --before-bin: this build against the older one, in the same run
            beast = cell(records, "loadbench-server", c, "server_cpu_us_per_req")
            before = cell(records, BEFORE, c, "server_cpu_us_per_req")
            if beast and before:
                lines.append(
                    f"- c = {c}: " + versus("loadbench-server", beast.median, BEFORE, before.median)
                )
        return lines

    problems = [r for r in records if r["errors"] or r["non_2xx"]]
    settings = {
        "Workload": f"GET {args.path} (14-byte `Hello, World!\\n`, text/plain), HTTP/1.1 keep-alive",
        "Generator": f"`taskset -c {args.generator_cpu} wrk -t1 -cC -d{args.duration}s --latency` "
        "(+ a Lua `done` hook that prints wrk's exact counts, no per-request Lua)",
        "Servers": f"each pinned to CPU {args.server_cpu} with taskset, one worker: loadbench-server "
        "`--workers 1`, nginx `worker_processes 1` (bench/peers/nginx), node:http "
        "single process (bench/peers/node). On a connection it closes after the response, "
        "loadbench-server sends the response's tail and its FIN in one segment (MSG_MORE before the "
        "close); nginx sends them apart - the setup part's segment column counts it",
        **(
            {
                BEFORE: f"the same peer entry launched from an older build's binary (`--before-bin {args.before_bin}`)"
            }
            if getattr(args, "before_bin", None)
            else {}
        ),
        "Concurrencies": ", ".join(str(c) for c in concs),
        "Repeats": f"median of {args.repeats} x {args.duration} s per cell; repeats outermost, servers "
        "innermost (interleaved), all servers running throughout; "
        f"{args.warmup} s unrecorded warm-up per server",
        "req/s": "wrk's exact response count / wrk's exact measured window (Lua summary.duration)",
        "CPU us/req": "server utime+stime over its whole process tree (nginx = master + worker) from "
        "/proc/<pid>/stat right before and right after the wrk run / wrk's exact response count",
        "Command": f"`{command}`",
    }
    parts = [
        *report_head(
            "Server baseline: loadbench-server vs nginx vs node:http",
            "bench/server_vs_peers.py",
            env,
            settings,
            f"every repeat, with wrk's own output, in `{Path(args.out).name}.jsonl`",
        ),
        "## Headline: loadbench-server vs nginx, server CPU us per response (median)",
        "",
        *headline(),
        "",
        "## Server CPU us per response (median; lower is better - the figure that ranks servers here)",
        "",
        "With the server alone on CPU 0 and wrk alone on CPU 1 both cores saturate at c >= 10, so req/s "
        "is capped by whichever side is slower; CPU time per response is what the server itself costs and "
        "does not depend on how hard it was pushed. The core-use and other-work tables below say how busy "
        "the two cores really were in this run.",
        "",
        table("server_cpu_us_per_req", True, 2),
        "",
        "## Throughput, req/s (median; higher is better)",
        table("rps", False, 0),
        "",
        "## Latency p50 / p99 (ms, median of repeats, as wrk measured it)",
        "",
        "p50:",
        "",
        table("lat_p50", True, 3, 1e-3),
        "",
        "p99:",
        "",
        table("lat_p99", True, 3, 1e-3),
        "",
        "## Noise: min-max of the repeats (req/s (spread) / CPU us/req (spread))",
        spread_table(),
        "",
        f"## Core use: server busy / wrk busy (fraction of one core over the run; >= {BUSY_LIMIT} = saturated)",
        busy_table(),
        "",
        "## Other work on the machine during the runs (cores busy outside server and wrk, median)",
        "",
        "Machine busy time (/proc/stat) minus the server's and wrk's own CPU, per run. Near 0 means the "
        "two pinned cores were ours; anything above says other processes competed for them.",
        "",
        foreign_table(),
        "",
        *setup_lines(records, servers),
        *syscall_lines(counted),
        "## Errors",
        "none: every run answered every request with 200"
        if not problems
        else "\n".join(
            f"- {r['server']} c={r['connections']} repeat {r['repeat']}: {r['errors']} socket errors, "
            f"{r['non_2xx']} non-2xx"
            for r in problems
        ),
        "",
    ]
    return "\n".join(parts)


def main(argv: Optional[list[str]] = None, repo: Optional[Path] = None) -> int:
    """bench/server_vs_peers.py: ``repo`` is the checkout (bench/peers, reports/)."""
    args = parse_args(argv, repo)
    given = sys.argv[1:] if argv is None else argv
    args.command = "python3 bench/server_vs_peers.py" + (" " + shlex.join(given) if given else "")
    if args.protocol == "h2":
        return server_comparison_h2.main(args)
    started = time.monotonic()
    if args.report_only:
        records, env, command = read_jsonl(Path(args.out).with_suffix(".jsonl"))
    else:
        records, env = run(args)
        command = args.command
    text = report(records, env, args, command)
    write_report(Path(args.out).with_suffix(".md"), text)
    print(text)
    print(
        f"server_vs_peers: done in {time.monotonic() - started:.0f} s; wrote {args.out}.md and .jsonl"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
