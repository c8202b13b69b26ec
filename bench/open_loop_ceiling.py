#!/usr/bin/env python3
"""One generator thread's on-time ceiling: the highest open-loop rate one pinned loadbench thread
sends with a lateness p99 under 200 us, against Beast and nginx, and what stops it above that.

    python3 bench/open_loop_ceiling.py            # -> reports/open-loop-ceiling.{md,jsonl} (~6 min)
    python3 bench/open_loop_ceiling.py --smoke    # 1 repeat, 1 s steps, Beast only, a temp dir

Each server is pinned to CPU 0 with one worker, the generator's one thread to CPU 1 (50
connections, growing to 200 when all are busy). Its closed loop over 50 connections gives the
top of the search; the search then bisects the rate (5 s windows after 1 s of warm-up) until the
on-time and late rates are within 5 % of each other. A rate is on time when every due request
was sent and answered, none failed and the sends' lateness p99 (due time -> bytes handed to the
socket) is under --lateness-us. At the lowest late rate, loadbench's own "limited by" rule
(loadbench.core.limits) says who stopped it: the generator's CPU, its loop's wake-ups, the pool
or the server - so "this machine's generator drives at most R on time" is a measurement.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import loadbench
from loadbench import analysis
from loadbench.bench.environment_block import environment, machine_note
from loadbench.bench.gate import add_gate_args, make_gate, wait_quiet
from loadbench.bench.jsonl import JsonlWriter, read_jsonl
from loadbench.bench.peers import launch_peer, registry_choices
from loadbench.bench.report_text import report_head, write_report
from loadbench.report.markdown import fmt_number, table

REPO = Path(__file__).resolve().parents[1]
PEERS = REPO / "bench" / "peers"
SERVER_CPU, GENERATOR_CPU = 0, 1


def step(url: str, rate: float, args: argparse.Namespace, pid: int) -> dict:
    r = loadbench.run(
        url, rate=rate, connections=args.connections, max_connections=args.max_connections,
        duration=args.duration, warmup=args.warmup, cpus=[GENERATOR_CPU], sample_pid=pid,
    )  # fmt: skip
    late_p99 = r.lateness.percentile(99) if r.lateness is not None and r.lateness.count else None
    limit = r.limit or {}
    return {
        "rate": rate,
        "due": r.due,
        "responses": r.responses,
        "errors": r.error_count,
        "lateness_p99_us": late_p99,
        "loop_lateness_p99_us": (
            r.loop_lateness.percentile(99) if r.loop_lateness is not None else None
        ),
        "slot_waits": r.slot_waits,
        "wakeups_per_response": r.wakeups / r.responses if r.responses else None,
        "generator_busy": r.cpu_s / r.duration_s if r.duration_s else None,
        "generator_cpu_us_per_req": r.cpu_us_per_req,
        "pool": dict(r.pool),
        "limit_by": limit.get("by"),
        "limit_reason": limit.get("reason"),
        "on_time": (
            r.error_count == 0
            and r.responses == r.due
            and late_p99 is not None
            and late_p99 < args.lateness_us
        ),
    }


def search(peer_name: str, url: str, pid: int, repeat: int, args, jsonl, gate) -> None:
    wait_quiet(gate)
    closed = loadbench.run(
        url, connections=args.connections, duration=args.duration, warmup=args.warmup,
        cpus=[GENERATOR_CPU],
    )  # fmt: skip
    lo, hi = args.start, closed.rps
    base = {"record": "step", "server": peer_name, "repeat": repeat}
    jsonl.write({**base, "record": "closed", "rps": closed.rps})
    first = step(url, lo, args, pid)
    jsonl.write({**base, **first})
    if not first["on_time"]:
        hi, lo = lo, 0.0
    while lo and hi / lo > 1 + args.precision:
        mid = round((lo + hi) / 2)
        wait_quiet(gate)
        s = step(url, mid, args, pid)
        jsonl.write({**base, **s})
        print(peer_name, repeat, s["rate"], s["on_time"], s["lateness_p99_us"], flush=True)
        lo, hi = (mid, hi) if s["on_time"] else (lo, mid)
    jsonl.write({**base, "record": "ceiling", "ceiling": lo, "first_late": hi})


def what_limits(s: dict) -> str:
    """Why a late step was late, at this search's tolerance (tighter than loadbench's own rule,
    which attributes lateness from 1 ms on): the thread's CPU, the pool, or its wake-ups."""
    if s["generator_busy"] is not None and s["generator_busy"] >= 0.9:
        return f"the generator's CPU ({100 * s['generator_busy']:.0f} % busy)"
    if s["due"] and s["slot_waits"] > 0.01 * s["due"]:
        return f"free connections ({s['slot_waits']:,} of {s['due']:,} sends waited for one)"
    return (
        f"its wake-ups: loop lateness p99 {fmt_number(s['loop_lateness_p99_us'])} us with the "
        f"thread {100 * s['generator_busy']:.0f} % busy"
    )


def render(records: list[dict], env: dict, command: str, lateness_us: float) -> str:
    rows, reasons = [], []
    for server in sorted({r["server"] for r in records if "server" in r}):
        ceilings = [r for r in records if r.get("record") == "ceiling" and r["server"] == server]
        steps = [r for r in records if r.get("record") == "step" and r["server"] == server]
        closed = [
            r["rps"] for r in records if r.get("record") == "closed" and r["server"] == server
        ]
        at = [
            s
            for c in ceilings
            for s in steps
            if s["repeat"] == c["repeat"] and s["rate"] == c["ceiling"]
        ]
        late = [
            s
            for c in ceilings
            for s in steps
            if s["repeat"] == c["repeat"] and s["rate"] == c["first_late"]
        ]
        values = [c["ceiling"] for c in ceilings]
        rows.append(
            [
                server,
                f"{fmt_number(analysis.median(values))} ({fmt_number(min(values))}-"
                f"{fmt_number(max(values))})",
                fmt_number(analysis.median(closed)),
                fmt_number(analysis.median([s["lateness_p99_us"] for s in at])),
                fmt_number(analysis.median([s["wakeups_per_response"] for s in at]), 2),
                fmt_number(analysis.median([s["generator_cpu_us_per_req"] for s in at]), 2),
                f"{100 * analysis.median([s['generator_busy'] for s in at]):.0f} %",
                fmt_number(analysis.median([s["lateness_p99_us"] for s in late])),
                fmt_number(analysis.median([s["generator_busy"] for s in late]) * 100) + " %",
            ]
        )
        reasons += [
            f"- {server}, repeat {s['repeat']} at {fmt_number(s['rate'])} req/s: late by "
            f"{what_limits(s)}; loadbench's rule: {s['limit_by']} - {s['limit_reason']}"
            for s in late
        ]
    lines = report_head(
        "One generator thread's on-time ceiling",
        "`bench/open_loop_ceiling.py`",
        env,
        {
            "Pinning": f"server on CPU {SERVER_CPU} (one worker), loadbench's one thread on CPU "
            f"{GENERATOR_CPU}",
            "On time": f"every due request sent and answered, no error, lateness p99 < "
            f"{lateness_us:g} us",
            "Command": f"`{command}`",
        },
        "open-loop-ceiling.jsonl",
    )
    lines += [
        "## The highest rate sent on time",
        "",
        "Ceiling: the highest rate found on time, median of the repeats (min-max); closed: the "
        "same thread's closed loop over 50 connections (the search's top). At the ceiling: its "
        "lateness p99, the loop's wake-ups per response, the generator's CPU per response and "
        "how busy its thread was. Above it: the lateness p99 at the lowest late rate and how "
        "busy the thread was there; below, what made each of those runs late (its CPU at 90 % "
        "busy or more, sends that waited for a connection, or else its wake-ups) beside "
        "loadbench's own verdict (loadbench.core.limits, which attributes lateness from 1 ms on).",
        "",
        table(
            [
                "server",
                "ceiling req/s",
                "closed req/s",
                "lateness p99 us",
                "wake-ups / resp",
                "gen us/resp",
                "gen busy",
                "above: lateness p99 us",
                "above: gen busy",
            ],
            rows,
        ),  # fmt: skip
        "",
        "At the lowest late rate:",
        "",
        *reasons,
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", default="beast,nginx", help="registry peers")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--duration", type=float, default=5.0, help="seconds per step")
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--max-connections", type=int, default=200)
    p.add_argument("--start", type=float, default=10_000, help="the search's first rate")
    p.add_argument("--precision", type=float, default=0.05)
    p.add_argument("--lateness-us", type=float, default=200.0)
    p.add_argument("--out", default=str(REPO / "reports" / "open-loop-ceiling"))
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--report-only", action="store_true")
    add_gate_args(p)
    args = p.parse_args(argv)
    if args.smoke:
        args.repeats, args.duration, args.warmup, args.servers = 1, 1.0, 0.2, "beast"
        args.out = str(Path(tempfile.mkdtemp()) / "open-loop-ceiling")
    out = Path(args.out)
    command = "python3 bench/open_loop_ceiling.py" + (" " + " ".join(argv or sys.argv[1:])).rstrip()
    if not args.report_only:
        gate = make_gate(args)
        first = wait_quiet(gate)
        env = environment()
        env["Load average at start"] += f" - {machine_note(first['load1_at_start'], first)}"
        jsonl = JsonlWriter(out.with_suffix(".jsonl"))
        jsonl.write({"record": "environment", "environment": env, "command": command})
        choices = registry_choices([(s, "http") for s in args.servers.split(",")], PEERS)
        for repeat in range(1, args.repeats + 1):
            for choice in choices:  # a fresh server per search
                with launch_peer(choice, cpus=[SERVER_CPU], peers_dir=PEERS) as peer:
                    search(
                        choice.label, peer.url("/plaintext"), peer.pid, repeat, args, jsonl, gate
                    )
        jsonl.close()
    records, env, command = read_jsonl(out.with_suffix(".jsonl"))
    write_report(out.with_suffix(".md"), render(records, env, command, args.lateness_us))
    print(out.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
