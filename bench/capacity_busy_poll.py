#!/usr/bin/env python3
"""Who decides a fast server's capacity: the server, or the generator's open loop? The default
sweep's capacity search (p99<10ms, 1 s steps judged per window, the pool sized by Little's law)
against Beast and nginx, with the generator's busy-poll and with its sleeping tick (issue 59),
beside each server's closed-loop peak and CPU ceiling.

    python3 bench/capacity_busy_poll.py            # -> reports/capacity-busy-poll.{md,jsonl} (~10 min)
    python3 bench/capacity_busy_poll.py --smoke    # Beast, one loop, a temp dir
    python3 bench/capacity_busy_poll.py --report-only

Each (repeat, server, loop) is a freshly started server pinned to CPU 0 with one worker; the
generator's one thread on CPU 1. First the same thread's closed-loop peak (50 connections), then
loadbench.capacity with the sweep's settings and that peak (which sizes the pool). The outcome
is the search's own: found (a capacity), generator-bound (a lower bound, and the server's CPU
ceiling above it) or server-bound.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Optional

import loadbench
from bench_drivers.environment_block import environment, machine_note
from bench_drivers.gate import add_gate_args, make_gate, wait_quiet
from bench_drivers.jsonl import JsonlWriter, read_jsonl
from bench_drivers.peers import launch_peer, registry_choices
from bench_drivers.report_text import command_of, report_head, write_report
from loadbench.report.markdown import fmt_number, table

REPO = Path(__file__).resolve().parents[1]
PEERS = REPO / "bench" / "peers"
SERVER_CPU, GENERATOR_CPU = 0, 1
OBJECTIVE = "p99<10ms"  # the default sweep's (sweep/file.py DEFAULT_CAPACITY_OBJECTIVES)
LOOPS = {"busy-poll": True, "tick": False}


def search(url: str, pid: int, busy: bool, args) -> dict:
    closed = loadbench.run(
        url, connections=50, duration=args.step, warmup=0.5, cpus=[GENERATOR_CPU], sample_pid=pid
    )
    found = loadbench.capacity(
        url, OBJECTIVE, peak=closed.rps, step=args.step, settle=0.5, window=1.0,
        precision=0.02, repeats=1, cpus=[GENERATOR_CPU], sample_pid=pid, busy_poll=busy,
    )  # fmt: skip
    d = found.to_dict()
    server = closed.extras.get("server") or {}
    return {
        "closed_rps": closed.rps,
        "closed_server_cpu_us_per_req": server.get("cpu_us_per_req"),
        "outcome": found.outcome,
        "capacity": found.capacity,
        "lower_bound": found.lower_bound,
        "ceiling": found.ceiling,
        "first_failing": found.first_failing,
        "message": found.message(),
        "steps": len(found.steps),
        "loops": sorted({s.result.to_dict()["config"].get("loop") or "?" for s in found.steps}),
        "search": d,
    }


def render(records: list[dict], env: dict, command: str, raw_name: str) -> str:
    rows = []
    runs = [r for r in records if r.get("record") == "search"]
    for server in sorted({r["server"] for r in runs}):
        for loop in LOOPS:
            group = [r for r in runs if (r["server"], r["loop"]) == (server, loop)]
            if not group:
                continue
            for r in group:
                rows.append(
                    [
                        server,
                        loop,
                        str(r["repeat"]),
                        r["outcome"],
                        fmt_number(r["capacity"]) if r["capacity"] else "n/a",
                        fmt_number(r["lower_bound"]) if r["lower_bound"] else "n/a",
                        fmt_number(r["ceiling"]) if r["ceiling"] else "n/a",
                        fmt_number(r["closed_rps"]),
                        f"{100 * (r['capacity'] or r['lower_bound'] or 0) / r['closed_rps']:.0f} %",
                        str(r["steps"]),
                    ]
                )
    messages = [f"- {r['server']}, {r['loop']}, repeat {r['repeat']}: {r['message']}" for r in runs]
    lines = report_head(
        "Capacity with the generator's busy-poll and with its tick",
        "`bench/capacity_busy_poll.py`",
        env,
        {
            "Pinning": f"server on CPU {SERVER_CPU} (one worker, fresh per search); the generator's "
            f"one thread on CPU {GENERATOR_CPU}",
            "Search": f"{OBJECTIVE}, the default sweep's 1 s steps judged per 1 s window, 0.5 s "
            "settle, 2 % precision, the pool sized from the closed-loop peak (slo/pool.py)",
            "Command": f"`{command}`",
        },
        raw_name,
    )
    lines += [
        "## Every search",
        "",
        "capacity: the highest rate that met the objective in every run (outcome found); lower "
        "bound: the highest rate the generator sent on time when it, not the server, ended the "
        "search (generator-bound); ceiling: the server's one core over its least CPU per "
        "response; closed: the same thread's closed-loop peak; share: the capacity (or bound) "
        "over that peak.",
        "",
        table(
            [
                "server",
                "loop",
                "repeat",
                "outcome",
                "capacity",
                "lower bound",
                "CPU ceiling",
                "closed req/s",
                "share of closed",
                "steps",
            ],
            rows,
        ),  # fmt: skip
        "",
        "What each search said:",
        "",
        *messages,
        "",
    ]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", default="beast,nginx", help="registry peers")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--step", type=float, default=1.0, help="seconds per step (the sweep's)")
    p.add_argument("--out", default=str(REPO / "reports" / "capacity-busy-poll"))
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--report-only", action="store_true")
    add_gate_args(p)
    args = p.parse_args(argv)
    loops = dict(LOOPS)
    if args.smoke:
        args.servers, args.repeats, loops = "beast", 1, {"busy-poll": True}
        args.out = str(Path(tempfile.mkdtemp()) / "capacity-busy-poll")
    out = Path(args.out)
    raw = out.with_suffix(".jsonl")
    command = command_of("bench/capacity_busy_poll.py", argv)
    if not args.report_only:
        gate = make_gate(args)
        first = wait_quiet(gate)
        env = environment()
        env["Load average at start"] += f" - {machine_note(first['load1_at_start'], first)}"
        jsonl = JsonlWriter(raw)
        jsonl.write({"record": "environment", "environment": env, "command": command})
        choices = registry_choices([(s, "http") for s in args.servers.split(",")], PEERS)
        for repeat in range(1, args.repeats + 1):
            for choice in choices:
                for loop, busy in loops.items():
                    waited = wait_quiet(gate)
                    with launch_peer(choice, cpus=[SERVER_CPU], peers_dir=PEERS) as peer:
                        row = search(peer.url("/plaintext"), peer.pid, busy, args)
                    jsonl.write({"record": "search", "server": choice.label, "loop": loop,
                                 "repeat": repeat, "load1_at_start": waited["load1_at_start"],
                                 **row})  # fmt: skip
                    print(choice.label, loop, repeat, row["message"], flush=True)
        jsonl.close()
    records, env, command = read_jsonl(raw)
    write_report(out.with_suffix(".md"), render(records, env, command, raw.name))
    print(out.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
