"""The HTTP/2 part of bench/server_vs_peers.py (`--protocol h2`): h2load pinned to CPU 1
against loadbench-server (h2c and ALPN h2), nginx (http2, TLS), h2o (h2c and TLS) and
node:http2 (h2c), each with one worker pinned to CPU 0, GET /plaintext.

Per cell (c connections x m streams each) it records req/s (h2load's exact 2xx..5xx count /
h2load's measured window) and the server's CPU us per response: utime+stime of the server's
process tree from /proc right before and right after the h2load run / h2load's exact count.
Repeats outermost, servers innermost (interleaved), median of the repeats.

    python3 bench/server_vs_peers.py --protocol h2                      # c = 1, 25, 50 at m = 10
    python3 bench/server_vs_peers.py --protocol h2 -d 2 -r 1 --h2-cells 25x10   # a smoke run

Writes reports/server-h2.md and every repeat to reports/server-h2.jsonl (by default).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import time
from pathlib import Path
from typing import Optional, Sequence

from loadbench.core.sampler import window
from loadbench.report.markdown import best_table
from loadbench.sweep.targets import program_version

from .checkout import reports_dir
from .child import ChildRun, run_child, taskset
from .environment_block import environment, machine_note
from .gate import foreign_cores, gate_note, make_gate, outside_share, wait_quiet
from .jsonl import JsonlWriter, read_jsonl
from .peers import LaunchedPeer, PeerChoice, registry_choices, start_peers, stop_all
from .repeats import Summary, summarize
from .report_text import report_head, versus, write_report

# The report's servers, in its order: (registry peer of bench/peers/peers.toml, protocol), each
# labelled "<the registry's label> <protocol>" ("nginx h2") - the names --servers takes.
SERVERS = (
    ("beast", "h2c"),
    ("beast", "h2"),
    ("nginx", "h2"),
    ("h2o", "h2c"),
    ("h2o", "h2"),
    ("node", "h2c"),
    ("node", "h2"),
)
DEFAULT_SERVERS = tuple(s for s in SERVERS if s != ("node", "h2"))  # node:http2 h2: on request


def known_servers(
    peers_dir: Path, servers: Sequence[tuple[str, str]] = SERVERS
) -> dict[str, PeerChoice]:
    """The report's labels ("loadbench-server h2c") -> registry peer and protocol."""
    choices = registry_choices(servers, peers_dir, protocol_in_label=True)
    return {c.label: c for c in choices}


def parse_cells(text: str) -> list[tuple[int, int]]:
    cells = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)x(\d+)\s*", part)
        if not m:
            raise SystemExit(
                f"server_vs_peers: --h2-cells expects CxM[,CxM...] (e.g. 25x10), got {part!r}"
            )
        cells.append((int(m.group(1)), int(m.group(2))))
    return cells


def peer_choices(args: argparse.Namespace) -> dict[str, PeerChoice]:
    """--servers as registry peers and protocols (loadbench.sweep.targets.launch starts each and
    waits for its HTTP/2 SETTINGS frame: some speak no HTTP/1.1 at all)."""
    known = known_servers(args.peers_dir)
    unknown = [name for name in args.servers if name not in known]
    if unknown:
        raise SystemExit(
            f"server_vs_peers --protocol h2: unknown server(s) {', '.join(unknown)} "
            f"(known: {', '.join(known)})"
        )
    return {name: known[name] for name in args.servers}


def h2load_run(
    h2load: str, url: str, c: int, m: int, duration: int, cpu: int
) -> tuple[ChildRun, dict]:
    argv = taskset([cpu]) + [h2load, "-t1", f"-c{c}", f"-m{m}", "-D", str(duration), url]
    child = run_child(argv, timeout_s=duration * 3 + 30)
    text = child.stdout
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    finished = re.search(r"finished in ([\d.]+)s", text)
    counts = re.search(
        r"requests: \d+ total, \d+ started, \d+ done, \d+ succeeded, (\d+) failed, (\d+) errored, "
        r"(\d+) timeout",
        text,
    )
    if child.returncode != 0 or not (codes and finished and counts):
        raise RuntimeError(
            f"h2load failed (exit {child.returncode}): {(child.stderr or text)[-600:]}"
        )
    n = [int(g) for g in codes.groups()]
    protocol = re.search(r"Application protocol: (\S+)", text)
    return child, {
        "responses": sum(n),
        "non_2xx": sum(n[1:]),
        "errors": sum(int(g) for g in counts.groups()),
        "duration_s": float(finished.group(1)),
        "protocol": protocol.group(1) if protocol else "?",
    }


def measure(
    peer: LaunchedPeer, h2load: str, args: argparse.Namespace, c: int, m: int, repeat: int
) -> dict:
    before = peer.snapshot()
    child, result = h2load_run(h2load, peer.url(args.path), c, m, args.duration, args.generator_cpu)
    server = window(before, peer.snapshot(), result["responses"])
    rps = result["responses"] / result["duration_s"] if result["duration_s"] > 0 else 0.0
    return {
        "server": peer.name,
        "connections": c,
        "streams": m,
        "repeat": repeat,
        "path": args.path,
        **result,
        "rps": rps,
        "server_cpu_s": server["cpu_s"],
        "server_cpu_us_per_req": server["cpu_us_per_req"],
        "server_busy": server["cpu_s"] / server["window_s"],
        "server_window": server,
        "h2load_cpu_s": child.cpu_s,
        "h2load_busy": child.busy,
        "wall_s": child.wall_s,
        "foreign_cores": foreign_cores(server, child.cpu_s),
        "outside_share": outside_share(server, child.cpu_s),
        "load1": os.getloadavg()[0],
        "argv": shlex.join(child.argv),
        "h2load_stdout": child.stdout,
    }


def run(args: argparse.Namespace, cells: list[tuple[int, int]]) -> tuple[list[dict], dict]:
    h2load = shutil.which("h2load")
    if h2load is None:
        raise SystemExit(
            "server_vs_peers: h2load is not installed (apt-get install nghttp2-client)"
        )
    env = environment()
    env["Load generator"] = program_version([h2load, "--version"], r"nghttp2/\S+")
    records: list[dict] = []
    gate = make_gate(args)
    first = wait_quiet(gate)  # before any server starts: the machine as we found it
    out = Path(args.out)
    jsonl = JsonlWriter(out.with_suffix(".jsonl"))
    peers: list[LaunchedPeer] = []
    try:
        peers = start_peers(
            list(peer_choices(args).values()),
            [args.server_cpu],
            env,
            args.peers_dir,
            binary=args.beast_bin,
        )
        for peer in peers:
            print(
                f"{peer.name}: pid {peer.pid} on CPU {args.server_cpu}, {peer.url(args.path)}",
                flush=True,
            )
            if args.warmup > 0:
                h2load_run(h2load, peer.url(args.path), 10, 10, args.warmup, args.generator_cpu)
        for repeat in range(1, args.repeats + 1):
            for c, m in cells:
                for peer in peers:
                    waited = wait_quiet(gate)
                    try:
                        record = measure(peer, h2load, args, c, m, repeat)
                        record["gate"], record["load1_at_start"] = waited, waited["load1_at_start"]
                    except RuntimeError as exc:
                        print(f"  repeat {repeat} c={c} m={m} {peer.name}: FAIL {exc}", flush=True)
                        continue
                    jsonl.write(record)
                    records.append(record)
                    print(
                        f"  repeat {repeat} c={c:<3} m={m:<3} {peer.name:<21} {record['rps']:>10,.0f} req/s "
                        f"{record['server_cpu_us_per_req']:>7.2f} us/req  server busy {record['server_busy']:.2f}"
                        f"  h2load busy {record['h2load_busy']:.2f} ({record['protocol']})",
                        flush=True,
                    )
    finally:
        stop_all(peers)
        env["Load average at start"] += f" - {machine_note(first['load1_at_start'], first)}"
        env["Load gate"] = gate_note(first, records)
        jsonl.write({"record": "environment", "environment": env, "command": args.command})
        jsonl.close()
    return records, env


def report(
    records: list[dict],
    env: dict,
    args: argparse.Namespace,
    cells: list[tuple[int, int]],
    command: str,
) -> str:
    header = ["Server"] + [f"c = {c}, m = {m}" for c, m in cells]

    def cell(server: str, c: int, m: int, key: str) -> Optional[Summary]:
        return summarize(
            r[key]
            for r in records
            if r["server"] == server and r["connections"] == c and r["streams"] == m
        )

    def table(key: str, lowest: bool, digits: int) -> str:
        rows = [
            [s] + [(x.median if (x := cell(s, c, m, key)) else None) for c, m in cells]
            for s in args.servers
        ]
        return best_table(header, rows, lowest, digits)

    def headline() -> list[str]:
        lines = []
        for c, m in cells:
            for ours, theirs in (
                ("loadbench-server h2", "nginx h2"),
                ("loadbench-server h2c", "h2o h2c"),
            ):
                a, b = (
                    cell(ours, c, m, "server_cpu_us_per_req"),
                    cell(theirs, c, m, "server_cpu_us_per_req"),
                )
                if not (a and b):
                    lines.append(f"- c = {c}, m = {m}: {ours} vs {theirs}: n/a")
                    continue
                lines.append(f"- c = {c}, m = {m}: " + versus(ours, a.median, theirs, b.median))
        return lines

    problems = [r for r in records if r["errors"] or r["non_2xx"]]
    settings = {
        "Workload": f"GET {args.path} (14-byte `Hello, World!\\n`), HTTP/2, c connections x m concurrent streams",
        "Generator": f"`taskset -c {args.generator_cpu} h2load -t1 -cC -mM -D {args.duration} URL` "
        "(http:// = h2c prior knowledge, https:// = TLS with ALPN h2)",
        "Servers": f"each pinned to CPU {args.server_cpu}, one worker: loadbench-server `--workers 1`, nginx "
        "`worker_processes 1` + `listen ... ssl http2` (bench/peers/nginx), h2o `num-threads: 1` with an "
        "mruby handler (bench/peers/h2o), node:http2 stream API, one process (bench/peers/node/hello_h2.js)",
        "Repeats": f"median of {args.repeats} x {args.duration} s per cell; repeats outermost, servers innermost; "
        f"{args.warmup} s unrecorded warm-up per server",
        "CPU us/req": "server utime+stime over its process tree from /proc right before and after the h2load run "
        "/ h2load's exact response count",
        "Command": f"`{command}`",
    }
    return "\n".join(
        [
            *report_head(
                "HTTP/2 servers: loadbench-server vs nginx, h2o, node:http2",
                "bench/server_vs_peers.py --protocol h2",
                env,
                settings,
                f"every repeat, with h2load's own output, in `{Path(args.out).name}.jsonl`",
            ),
            "## Headline: server CPU us per HTTP/2 response (median)",
            "",
            *headline(),
            "",
            "## Server CPU us per response (median; lower is better)",
            table("server_cpu_us_per_req", True, 2),
            "",
            "## Throughput, req/s (median; higher is better)",
            table("rps", False, 0),
            "",
            "## Core use: server busy (fraction of one core, median)",
            table("server_busy", False, 2),
            "",
            "## Other work on the machine during the runs (cores busy outside server and h2load, median)",
            table("foreign_cores", True, 2),
            "",
            "## Errors",
            "none: every run answered every request with 2xx"
            if not problems
            else "\n".join(
                f"- {r['server']} c={r['connections']} m={r['streams']} repeat {r['repeat']}: {r['errors']} "
                f"failed/errored/timeout, {r['non_2xx']} non-2xx"
                for r in problems
            ),
            "",
        ]
    )


def main(args: argparse.Namespace) -> int:
    cells = parse_cells(args.h2_cells)
    if args.servers is None:
        args.servers = list(known_servers(args.peers_dir, DEFAULT_SERVERS))
    if args.out is None:
        args.out = str(reports_dir(args.repo) / "server-h2")
    started = time.monotonic()
    if args.report_only:
        records, env, command = read_jsonl(Path(args.out).with_suffix(".jsonl"))
    else:
        records, env = run(args, cells)
        command = args.command
    text = report(records, env, args, cells, command)
    write_report(Path(args.out).with_suffix(".md"), text)
    print(text)
    print(
        f"server_vs_peers --protocol h2: done in {time.monotonic() - started:.0f} s; wrote {args.out}.md and .jsonl"
    )
    return 0
