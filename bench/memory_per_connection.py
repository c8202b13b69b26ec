"""Memory per idle keep-alive connection (C10k): servers and generators side by side.

    python bench/memory_per_connection.py                    # 10,000 connections -> reports/memory-per-connection.{md,jsonl}
    python bench/memory_per_connection.py --smoke            # 200 connections, written to a temp dir
    python bench/memory_per_connection.py -c 10000 --servers beast,nginx --out /tmp/mem

Servers (entries of bench/peers/peers.toml, each started by loadbench.sweep.targets.launch, 1
worker, in its own cgroup): the Beast reference server, nginx (NGINX_CONNECTIONS: its
worker_connections and open-file limit raised to hold N), node:http and the Python asyncio peer. For each: `loadbench.hold_connections(url, N, sample_pid=server)` opens N
keep-alive connections, waits until the server holds a descriptor for each, reads the server
tree's RSS and PSS growth / N, and sends one request on each (requests_ok proves they were
live). The holder's own growth / N is loadbench's bytes per idle connection as a generator.

nginx allocates its connection array (worker_connections slots) when it starts, so part of its
cost per connection is in its baseline: its figure is what accepting N connections adds.

Generators: wrk (and `loadbench run`) keep load on N connections for a few seconds against the
Beast server; their footprint per connection is (peak RSS at N - peak RSS at 1) / (N - 1),
peak RSS sampled from /proc every 50 ms. wrk allocates an 8 KiB read buffer per connection.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import loadbench
from bench_drivers.gate import add_gate_args, make_gate, wait_quiet
from loadbench.core.connections import raise_fd_limit
from loadbench.core.gate import cpu_snapshot, outside_share_between
from loadbench.sweep.registry import peer_target
from loadbench.sweep.targets import Target, launch

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
PEERS = BENCH_DIR / "peers"  # the servers: entries of the registry, PEERS / "peers.toml"

SERVERS = ("beast", "nginx", "node", "python-asyncio")


def server_targets(names: list[str]) -> list[Target]:
    unknown = [name for name in names if name not in SERVERS]
    if unknown:
        raise SystemExit(f"unknown server {unknown[0]!r} (known: {', '.join(SERVERS)})")
    return [peer_target(name, PEERS) for name in names]


def launch_env(target: Target, connections: int) -> dict:
    """nginx allows 4096 connections per worker: room for N (and its open-file limit) is asked
    of its launcher (bench/peers/nginx/run.sh)."""
    return {"NGINX_CONNECTIONS": str(connections + 256)} if target.name == "nginx" else {}


def measure_server(target: Target, connections: int, timeout: float, repeat: int) -> dict[str, Any]:
    why = target.unavailable_reason("http", PEERS)
    if why:
        return {"kind": "server", "name": target.name, "repeat": repeat, "skipped": why}
    server = launch(
        target, "http", workers=1, cpus=None, peers_dir=PEERS, env=launch_env(target, connections)
    )
    try:
        tree = loadbench.Sampler(server.pid, tree=True)
        pids, before = set(tree.snapshot().pids), cpu_snapshot()
        record = loadbench.hold_connections(
            server.base_url + "/", connections, sample_pid=server.pid, timeout=timeout
        )
        # What other processes used meanwhile (the gate's and the sweep's rule: every process but
        # this one and the server tree): memory does not depend on CPU, but the report says how
        # quiet the machine was, as every report here does.
        outside = outside_share_between(
            before, cpu_snapshot(), ours=pids | set(tree.snapshot().pids)
        )
        alive = server.alive()
    finally:
        server.stop()
    record.update(
        kind="server",
        name=target.name,
        repeat=repeat,
        server_alive_after=alive,
        outside_share=outside or 0.0,
        load1=os.getloadavg()[0],
    )
    return record


def median_server_rows(records: list[dict]) -> list[dict]:
    """Per server: the repeats' median RSS and PSS per connection, their spread, the fewest held
    and answered (a repeat that held fewer shows in the count)."""
    by_name: dict[str, list[dict]] = {}
    for r in records:
        if r["kind"] == "server":
            by_name.setdefault(r["name"], []).append(r)
    rows = []
    for name, group in by_name.items():
        measured = [r for r in group if "skipped" not in r]
        if not measured:
            rows.append({"name": name, "skipped": group[0]["skipped"]})
            continue
        rss = sorted(r["server"]["rss_bytes_per_connection"] for r in measured)
        pss = sorted(
            r["server"]["pss_bytes_per_connection"]
            for r in measured
            if r["server"]["pss_bytes_per_connection"] is not None
        )
        rows.append(
            {
                "name": name,
                "repeats": len(measured),
                "held": min(r["connections_held"] for r in measured),
                "ok": min(r["requests_ok"] for r in measured),
                "rss": statistics.median(rss),
                "rss_range": (rss[0], rss[-1]),
                "pss": statistics.median(pss) if pss else None,
                "processes": measured[-1]["server"]["processes"],
                "outside": max(r.get("outside_share", 0.0) for r in measured),
            }
        )
    return rows


def peak_rss_kib(argv: list[str], duration_s: float) -> tuple[int, int, str]:
    """Runs `argv`, sampling its RSS every 50 ms; returns (peak RSS KiB, exit code, stderr tail)."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        peak = 0
        try:
            sampler = loadbench.Sampler(proc.pid, interval=0.05)
            deadline = time.monotonic() + duration_s + 30
            while proc.poll() is None and time.monotonic() < deadline:
                snap = sampler.snapshot()
                if not snap.exited:
                    peak = max(peak, snap.rss_kib)
                time.sleep(0.05)
        except loadbench.ConfigError:
            pass  # it ended before it could be sampled
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        err.seek(0)
        return peak, proc.returncode, err.read().decode(errors="replace")[-300:]


def measure_generator(
    name: str, argv_for: Any, url: str, connections: int, duration_s: float
) -> dict[str, Any]:
    one, code_one, _ = peak_rss_kib(argv_for(url, 1, duration_s), duration_s)
    many, code_many, err_many = peak_rss_kib(argv_for(url, connections, duration_s), duration_s)
    per = (many - one) * 1024 / (connections - 1) if connections > 1 and one and many else None
    return {
        "kind": "generator",
        "name": name,
        "connections": connections,
        "peak_rss_kib_1": one,
        "peak_rss_kib_n": many,
        "bytes_per_connection": per,
        "exit_codes": [code_one, code_many],
        "stderr": err_many if code_many else "",
    }


def wrk_argv(url: str, connections: int, duration_s: float) -> list[str]:
    return ["wrk", "-t1", f"-c{connections}", f"-d{max(1, int(duration_s))}s", url]


def loadbench_argv(url: str, connections: int, duration_s: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "loadbench",
        "run",
        url,
        "-c",
        str(connections),
        "-d",
        str(duration_s),
    ]


def write_report(records: list[dict], stem: Path, connections: int, env: Any, gate: dict) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    with open(stem.with_suffix(".jsonl"), "w") as out:
        for r in records:
            out.write(json.dumps(r) + "\n")
        out.write(
            json.dumps(
                {"kind": "environment", "environment": env.to_dict(), "gate": gate}, default=str
            )
            + "\n"
        )
    rows = median_server_rows(records)
    repeats = max((r.get("repeats", 0) for r in rows), default=0)
    lines = [
        f"# Memory per idle keep-alive connection ({connections:,} connections)",
        "",
        "Generated by `bench/memory_per_connection.py`; raw data (every repeat) in "
        f"`{stem.with_suffix('.jsonl').name}`. Do not edit by hand.",
        "",
        "Servers (one worker each, started by loadbench): RSS and PSS growth of the server's process tree / "
        "connections held, after the server accepted every connection and before one request on each "
        "proved them live; median of the repeats, the RSS range beside it. Generators: growth of "
        "their own memory per connection. nginx preallocates its connection array (worker_connections) "
        "at start: its figure is what accepting the connections adds.",
        "",
        f"| Server | held | requests ok | RSS / conn (median of {repeats}) | RSS range | PSS / conn | "
        "processes | others' CPU (max) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    best = min((r["rss"] for r in rows if "rss" in r), default=None)
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['name']} | skipped: {r['skipped']} | | | | | | |")
            continue
        rss = f"{r['rss']:,.0f} B"
        pss = f"{r['pss']:,.0f} B" if r["pss"] is not None else "n/a"
        lines.append(
            f"| {r['name']} | {r['held']:,} | {r['ok']:,} | {'**' + rss + '**' if r['rss'] == best else rss} | "
            f"{r['rss_range'][0]:,.0f}-{r['rss_range'][1]:,.0f} B | {pss} | {r['processes']} | "
            f"{100 * r['outside']:.1f} % |"
        )
    lines += ["", "| Generator | bytes / connection | how |", "|---|---:|---|"]
    holders = [r["generator"] for r in records if r["kind"] == "server" and "generator" in r]
    if holders:
        worst = max(g["bytes_per_connection"] for g in holders)
        lines.append(
            f"| loadbench connections (holder) | {worst:,.1f} B | own RSS growth / N, the largest of "
            f"{len(holders)} runs ({holders[0]['holder_bytes_per_connection']} B of state each) |"
        )
    for r in records:
        if r["kind"] == "generator":
            per = (
                f"{r['bytes_per_connection']:,.0f} B"
                if r["bytes_per_connection"] is not None
                else "n/a"
            )
            lines.append(f"| {r['name']} | {per} | (peak RSS at N - at 1) / (N - 1), under load |")
    before = (
        "skipped (--no-wait)"
        if gate.get("skipped")
        else (
            "proceeded on a busy machine after the gate timed out"
            if gate.get("timed_out")
            else f"quiet after {gate.get('waited_s', 0):.0f} s"
        )
    )
    lines += [
        "",
        "## Environment",
        "",
        env.to_markdown().rstrip("\n"),
        f"| Load gate | {before} (load {gate.get('load1_at_start', 0):.2f} at start) |",
        "",
    ]
    stem.with_suffix(".md").write_text("\n".join(lines))


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-c", "--connections", type=int, default=10_000)
    p.add_argument("--servers", default=",".join(SERVERS))
    p.add_argument("--generators", default="wrk,loadbench-run", help="'' for none")
    p.add_argument("--duration", type=float, default=3.0, help="seconds of load per generator run")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument(
        "--out",
        type=Path,
        help="STEM of STEM.md and STEM.jsonl (default reports/memory-per-connection)",
    )
    p.add_argument(
        "-r", "--repeats", type=int, default=3, help="holds per server; the median is reported"
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="200 connections (unless -c), 1 s, one repeat, no quiet-machine wait, into a temp dir (unless --out)",
    )
    add_gate_args(p)
    args = p.parse_args(argv)
    if args.smoke:
        if "-c" not in (argv or sys.argv) and "--connections" not in (argv or sys.argv):
            args.connections = 200
        args.duration = 1.0
        args.repeats, args.no_wait = 1, True  # a quick look, never a report to commit
        args.out = (
            args.out or Path(tempfile.mkdtemp(prefix="loadbench-mem-")) / "memory-per-connection"
        )
    args.out = args.out or REPO_DIR / "reports" / "memory-per-connection"
    # Servers and generators started from here inherit the raised limit: each holds N sockets.
    _, note = raise_fd_limit(args.connections + 1024)
    if note:
        print(note, file=sys.stderr)
    gate = wait_quiet(make_gate(args))
    env = loadbench.environment()  # at the start: its load figure is the machine's before we ran
    records = []
    targets = server_targets([s for s in args.servers.split(",") if s])
    for repeat in range(1, args.repeats + 1):  # repeats outermost: drift hits every server alike
        for target in targets:
            print(f"server {target.name} (repeat {repeat}) ...", file=sys.stderr, flush=True)
            records.append(measure_server(target, args.connections, args.timeout, repeat))
            print(
                f"  {json.dumps(records[-1].get('server') or records[-1].get('skipped'))}",
                file=sys.stderr,
            )
    generators = [g for g in args.generators.split(",") if g]
    if generators:
        beast = loadbench.ServerProcess().start()
        try:
            for name in generators:
                if name == "wrk" and not shutil.which("wrk"):
                    records.append(
                        {
                            "kind": "generator",
                            "name": "wrk",
                            "bytes_per_connection": None,
                            "skipped": "wrk not installed",
                        }
                    )
                    continue
                argv_for = wrk_argv if name == "wrk" else loadbench_argv
                print(f"generator {name} ...", file=sys.stderr, flush=True)
                records.append(
                    measure_generator(
                        name, argv_for, beast.url("/"), args.connections, args.duration
                    )
                )
                print(f"  {records[-1]['bytes_per_connection']}", file=sys.stderr)
        finally:
            beast.stop()
            beast.kill()
    write_report(records, args.out, args.connections, env, gate)
    print(f"wrote {args.out.with_suffix('.md')} and {args.out.with_suffix('.jsonl')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
