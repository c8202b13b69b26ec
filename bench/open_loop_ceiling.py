#!/usr/bin/env python3
"""One generator thread's on-time ceiling: the highest open-loop rate one pinned loadbench thread
sends with a lateness p99 under 200 us, against Beast and nginx, and what makes it late where it
is.

    python3 bench/open_loop_ceiling.py            # -> reports/open-loop-ceiling.{md,jsonl} (~8 min)
    python3 bench/open_loop_ceiling.py --smoke    # 1 repeat, 1 s steps, Beast only, a temp dir

Each server is pinned to CPU 0 with one worker, the generator's one thread to CPU 1 (50
connections, growing to 200 when all are busy). Every rate of a grid (--rates) below 95 % of the
same thread's closed-loop peak is run (5 s windows after 1 s of warm-up), low to high, on a
fresh server per repeat. A rate is on time when every due request was sent and answered, none
failed and the sends' lateness p99 (due time -> bytes handed to the socket) is under
--lateness-us. A grid, not a bisection: on a VM the lateness is not monotone in the rate - a
thread that sleeps between sends pays the wake-up's latency on each, one too busy to sleep
does not - so the on-time rates need not form one interval. The ceiling is the highest rate up to
which every rate's median is on time; for each late rate the table says what made it late: the
thread's CPU, the pool, or its wake-ups (beside loadbench's own limit rule).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import loadbench
from bench_drivers.environment_block import environment, machine_note
from bench_drivers.gate import add_gate_args, make_gate, wait_quiet
from bench_drivers.jsonl import JsonlWriter, read_jsonl
from bench_drivers.peers import launch_peer, registry_choices
from bench_drivers.report_text import report_head, write_report
from loadbench import analysis
from loadbench.report.markdown import fmt_number, table

REPO = Path(__file__).resolve().parents[1]
PEERS = REPO / "bench" / "peers"
SERVER_CPU, GENERATOR_CPU = 0, 1


def step(url: str, rate: float, args: argparse.Namespace, pid: int) -> dict:
    r = loadbench.run(
        url, rate=rate, connections=args.connections, max_connections=args.max_connections,
        duration=args.duration, warmup=args.warmup, cpus=[GENERATOR_CPU], sample_pid=pid,
        **({"send_batch": args.send_batch_us * 1e-6} if args.send_batch_us is not None else {}),
    )  # fmt: skip
    late_p99 = r.lateness.percentile(99) if r.lateness is not None and r.lateness.count else None
    limit = r.limit or {}
    return {
        "rate": rate,
        "send_batch_us": args.send_batch_us,
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


def sweep_rates(peer_name: str, url: str, pid: int, repeat: int, args, jsonl, gate) -> None:
    """Every rate of the grid below the same thread's closed-loop peak, low to high."""
    wait_quiet(gate)
    closed = loadbench.run(
        url, connections=args.connections, duration=args.duration, warmup=args.warmup,
        cpus=[GENERATOR_CPU],
    )  # fmt: skip
    base = {"record": "step", "server": peer_name, "repeat": repeat}
    jsonl.write({**base, "record": "closed", "rps": closed.rps})
    for rate in args.rates:
        if rate > 0.95 * closed.rps:
            break
        wait_quiet(gate)
        s = step(url, rate, args, pid)
        jsonl.write({**base, **s})
        print(peer_name, repeat, rate, s["on_time"], s["lateness_p99_us"], flush=True)


def what_limits(s: dict) -> str:
    """Why a late step was late, at this driver's tolerance (tighter than loadbench's own rule,
    which attributes lateness from 1 ms on): the thread's CPU, the pool, or its wake-ups."""
    if s["generator_busy"] is not None and s["generator_busy"] >= 0.9:
        return f"the generator's CPU ({100 * s['generator_busy']:.0f} % busy)"
    if s["due"] and s["slot_waits"] > 0.01 * s["due"]:
        return f"free connections ({s['slot_waits']:,} of {s['due']:,} sends waited for one)"
    return (
        f"its wake-ups: loop lateness p99 {fmt_number(s['loop_lateness_p99_us'])} us with the "
        f"thread {100 * s['generator_busy']:.0f} % busy"
    )


def send_batch_note(steps: list[dict]) -> str:
    """The send batch the steps ran with (runs recorded before the option: the default)."""
    spans = sorted({s.get("send_batch_us") or 0.0 for s in steps})
    return ", ".join(
        f"{fmt_number(us)} us (--send-batch-us): due sends that close together go out in one "
        "wake-up"
        if us
        else "the engine's default: 40 us when requests are due closer together than that"
        for us in spans
    )


def render(records: list[dict], env: dict, command: str, lateness_us: float, raw_name: str) -> str:
    steps = [r for r in records if r.get("record") == "step"]
    summary, body, reasons = [], [], []
    for server in sorted({r["server"] for r in steps}):
        closed = [
            r["rps"] for r in records if r.get("record") == "closed" and r["server"] == server
        ]
        # with a send batch, also the ceiling at the tolerance plus the batch: the lateness the
        # batch adds by design, so what is left over it is the loop's own falling behind
        batch_us = max((s.get("send_batch_us") or 0.0 for s in steps), default=0.0)
        tolerances = [lateness_us] + ([lateness_us + batch_us] if batch_us else [])
        ceilings, broken = [None] * len(tolerances), [False] * len(tolerances)
        for rate in sorted({s["rate"] for s in steps if s["server"] == server}):
            group = [s for s in steps if (s["server"], s["rate"]) == (server, rate)]
            late = [s["lateness_p99_us"] for s in group if s["lateness_p99_us"] is not None]
            median = analysis.median(late)
            answered = all(s["responses"] == s["due"] and not s["errors"] for s in group)
            for k, tolerance in enumerate(tolerances):
                broken[k] = broken[k] or not (
                    answered and median is not None and median < tolerance
                )
                if not broken[k]:
                    ceilings[k] = rate
            on_time = answered and median is not None and median < lateness_us
            body.append(
                [
                    server,
                    fmt_number(rate),
                    f"{fmt_number(median)} ({fmt_number(min(late))}-{fmt_number(max(late))})"
                    if late
                    else "n/a",
                    "yes" if on_time else "no",
                    fmt_number(analysis.median([s["loop_lateness_p99_us"] for s in group])),
                    fmt_number(analysis.median([s["wakeups_per_response"] for s in group]), 2),
                    fmt_number(analysis.median([s["generator_cpu_us_per_req"] for s in group]), 2),
                    f"{100 * analysis.median([s['generator_busy'] for s in group]):.0f} %",
                    " / ".join(str(s["slot_waits"]) for s in group),
                ]
            )
            if not on_time:
                reasons += [
                    f"- {server} at {fmt_number(rate)} req/s, repeat {s['repeat']} (lateness p99 "
                    f"{fmt_number(s['lateness_p99_us'])} us): {what_limits(s)}; loadbench's rule: "
                    f"{s['limit_by']} - {s['limit_reason']}"
                    for s in group
                    if s["lateness_p99_us"] is None or s["lateness_p99_us"] >= lateness_us
                ]
        summary.append(
            [server]
            + [
                "none (the lowest rate was late)" if ceiling is None else fmt_number(ceiling)
                for ceiling in ceilings
            ]
            + [fmt_number(analysis.median(closed))]
        )
        summary_head = ["server"] + [f"ceiling req/s (< {t:g} us)" for t in tolerances]
    lines = report_head(
        "One generator thread's on-time ceiling",
        "`bench/open_loop_ceiling.py`",
        env,
        {
            "Pinning": f"server on CPU {SERVER_CPU} (one worker), loadbench's one thread on CPU "
            f"{GENERATOR_CPU}",
            "On time": "every due request sent and answered, no error, lateness p99 (median of "
            f"the repeats) < {lateness_us:g} us",
            "Send batch": send_batch_note(steps),
            "Command": f"`{command}`",
        },
        raw_name,
    )
    lines += [
        "## The highest rate sent on time",
        "",
        "Ceiling: the highest rate of the grid up to which every rate was on time (with a send "
        "batch, also at the tolerance plus the batch: the lateness the batch adds by design); "
        "closed: the same thread's closed loop over 50 connections, median of the repeats.",
        "",
        table(summary_head + ["closed req/s"], summary),
        "",
        "## Every rate",
        "",
        "Medians of the repeats: the sends' lateness p99 (min-max), the loop's own lateness p99 "
        "(due -> released by the loop), its wake-ups per response, the generator's CPU per "
        "response and how busy its thread was; slot waits: sends that found every connection "
        "busy, per repeat.",
        "",
        table(
            [
                "server",
                "rate",
                "lateness p99 us",
                "on time",
                "loop lateness p99 us",
                "wake-ups / resp",
                "gen us/resp",
                "gen busy",
                "slot waits",
            ],
            body,
        ),  # fmt: skip
        "",
        "What made each late run late - its thread's CPU (90 % busy or more), sends that waited "
        "for a connection, or else its wake-ups - beside loadbench's own verdict "
        "(loadbench.core.limits, which attributes lateness from 1 ms on):",
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
    p.add_argument(
        "--rates",
        default="10000,20000,30000,40000,50000,60000,70000,80000,100000,120000,150000,180000",
        help="the grid, req/s (those above 95 %% of the closed-loop peak are skipped)",
    )
    p.add_argument("--lateness-us", type=float, default=200.0)
    p.add_argument(
        "--send-batch-us",
        type=float,
        help="the engine's send batch, us (default: its own, 40 us; a capacity search with "
        "an objective of 5 ms or more uses 100)",
    )
    p.add_argument("--out", default=str(REPO / "reports" / "open-loop-ceiling"))
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--report-only", action="store_true")
    add_gate_args(p)
    args = p.parse_args(argv)
    args.rates = sorted(float(r) for r in args.rates.split(",") if r.strip())
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
            for choice in choices:  # a fresh server per repeat
                with launch_peer(choice, cpus=[SERVER_CPU], peers_dir=PEERS) as peer:
                    sweep_rates(
                        choice.label, peer.url("/plaintext"), peer.pid, repeat, args, jsonl, gate
                    )
        jsonl.close()
    records, env, command = read_jsonl(out.with_suffix(".jsonl"))
    report = render(records, env, command, args.lateness_us, out.with_suffix(".jsonl").name)
    write_report(out.with_suffix(".md"), report)
    print(out.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
