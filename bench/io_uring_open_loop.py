#!/usr/bin/env python3
"""Would io_uring, or a tick, make the open loop cheaper? (issue 45: io_uring "for the closed
loop and the open loop", and "wake-ups per unit of time, not per response") One keep-alive
HTTP/1.1 open loop written four times in bench/io_uring/http1_loop.cpp, the same schedule,
parser and counting in each - beside loadbench's engine at the same rate and send batch:

- epoll: sleeps in epoll_pwait2 until the next send's time or any response;
- epoll-tick: sleeps in clock_nanosleep until the next send's time, then takes every response
  that came meanwhile in one epoll_wait(0) (the engine's reads at the send wake-ups);
- uring: one io_uring wait until the next send's time or any completion;
- uring-tick: one io_uring wait that ends only at the next send's time, harvesting every
  completion then: the tick-driven loop as one system call a wake-up.

    python3 bench/io_uring_open_loop.py            # -> reports/io-uring-open-loop.{md,jsonl}
    python3 bench/io_uring_open_loop.py --smoke    # 1 repeat of 0.5 s, into a temp dir

Requests are due every 1/RATE s; when that is closer than the send batch (default 40 us, the
engine's) a wake-up sends every request due up to the batch after the first, as the engine
does. The pool is fixed (each connection one request in flight). Server pinned to CPU 0 (one
worker), every generator to CPU 1; repeats outermost, the tools in a rotating order inside
each repeat, each run after the load gate. CPU: the prototype's process over its window (its
rusage at the window's edges), the engine's threads. Needs g++ and liburing-dev.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Iterator

from io_uring_closed_loop import (
    WARMUP_S,
    measure_and_report,
    parse_args,
    per_repeat_ratio,
    prototype_run,
    rotations,
    sampled,
    with_gate_notes,
)

import loadbench
from bench_drivers.gate import kept, outside_share
from bench_drivers.repeats import median_range
from bench_drivers.report_text import (
    report_head,
)
from loadbench import analysis
from loadbench.report.markdown import fmt_number, table

REPO = Path(__file__).resolve().parents[1]
PROTOTYPE_MODES = ("epoll", "epoll-tick", "uring", "uring-tick")
TOOLS = (*PROTOTYPE_MODES, "loadbench")
# what io_uring saves each way of waiting, what the tick saves each I/O interface, and what the
# engine costs above its bare twin (the engine reads at its send wake-ups, as epoll-tick)
RATIOS = (
    ("uring", "epoll"),
    ("uring-tick", "epoll-tick"),
    ("epoll-tick", "epoll"),
    ("uring-tick", "epoll"),
    ("loadbench", "epoll-tick"),
)


def _tool_run(
    tool: str, url: str, c: int, rate: float, args: argparse.Namespace, binary: Path
) -> dict:
    """One open-loop run of one tool at `rate` over `c` connections: its window's responses,
    CPU, wake-ups and its sends' lateness."""
    cpu, seconds = args.generator_cpu, args.duration
    if tool in PROTOTYPE_MODES:
        out = prototype_run(binary, tool, url, c, seconds, cpu, rate, args.batch_us)
        return {"responses": out["responses"], "seconds": out["seconds"], "cpu_s": out["cpu_s"],
                "waits": out["batches"], "sends": out["sends"],
                "lateness_p50_us": out["lateness_p50_us"], "lateness_p99_us": out["lateness_p99_us"]}  # fmt: skip
    r = loadbench.run(url, rate=rate, connections=c, max_connections=c, duration=seconds,
                      warmup=WARMUP_S, send_batch=args.batch_us * 1e-6, cpus=[cpu])  # fmt: skip
    return {"responses": r.responses, "seconds": r.duration_s, "cpu_s": r.cpu_s,
            "waits": r.counters.get("wakeups"), "sends": r.sends,
            "lateness_p50_us": r.lateness.percentile(50),
            "lateness_p99_us": r.lateness.percentile(99)}  # fmt: skip


def measure(peer, tool: str, c: int, rate: float, args: argparse.Namespace, binary: Path) -> dict:
    url = peer.url("/plaintext")
    run, window = sampled(peer, lambda: _tool_run(tool, url, c, rate, args, binary))
    per = (lambda x: x / run["responses"]) if run["responses"] else (lambda x: None)
    return {
        "outside_share": outside_share(window, run["cpu_s"]),
        "tool": tool,
        "connections": c,
        "rate": rate,
        "batch_us": args.batch_us,
        "responses": run["responses"],
        "sends": run["sends"],
        "rps": run["responses"] / run["seconds"] if run["seconds"] else 0.0,
        "cpu_us_per_response": per(1e6 * run["cpu_s"]),
        "waits_per_response": per(run["waits"]),
        "lateness_p50_us": run["lateness_p50_us"],
        "lateness_p99_us": run["lateness_p99_us"],
        "server_cpu_us_per_req": window["cpu_us_per_req"],
    }


def runs(args: argparse.Namespace, binary: Path) -> Iterator[Callable[[], dict]]:
    for repeat, order, peer in rotations(args, list(TOOLS)):
        for rate in (float(x) for x in args.rates.split(",")):
            for tool in order:
                yield lambda tool=tool, rate=rate, peer=peer, repeat=repeat: {
                    "record": "run", "repeat": repeat, "server": peer.name,
                    **measure(peer, tool, args.connections, rate, args, binary),
                }  # fmt: skip


def render(records: list[dict], env: dict, command: str) -> str:
    every = [r for r in records if r.get("record") == "run"]
    runs = kept(every)
    rows, ratios = [], []
    for server, rate in sorted({(r["server"], r["rate"]) for r in runs}):
        cell = [r for r in runs if (r["server"], r["rate"]) == (server, rate)]
        name = f"{server} {fmt_number(rate)}/s"
        for tool in TOOLS:
            group = [r for r in cell if r["tool"] == tool]
            if not group:
                rows.append([name, tool, "n/a", "not measured", "", "", "", ""])
                continue
            rows.append(
                [
                    name,
                    tool,
                    fmt_number(analysis.median([r["rps"] for r in group])),
                    median_range([r["cpu_us_per_response"] for r in group]),
                    median_range([r["waits_per_response"] for r in group], 3),
                    median_range([r["lateness_p50_us"] for r in group], 0),
                    median_range([r["lateness_p99_us"] for r in group], 0),
                    median_range([r["server_cpu_us_per_req"] for r in group]),
                ]
            )
        ratios.append(
            [name] + [median_range(per_repeat_ratio(cell, a, b), 3) + "x" for a, b in RATIOS]
        )
    repeats = len({r["repeat"] for r in runs})
    batches = sorted({r["batch_us"] for r in runs})
    env = with_gate_notes(env, runs, every)
    lines = report_head(
        "io_uring and a tick against epoll for the open loop",
        "`bench/io_uring_open_loop.py`",
        env,
        {
            "Servers": ", ".join(sorted({r["server"] for r in runs}))
            + " (bench/peers registry), one worker each, pinned to CPU 0",
            "Load": "HTTP/1.1 keep-alive, GET /plaintext, requests due at a constant rate over "
            f"{', '.join(sorted({str(r['connections']) for r in runs}))} connections (a fixed "
            "pool), one generator thread pinned to CPU 1",
            "Send batch": f"{', '.join(fmt_number(b) for b in batches)} us: when requests are due "
            "closer together, one wake-up sends every one due up to the batch after the first "
            "(the engine's --send-batch)",
            "Tools": "bench/io_uring/http1_loop.cpp's four loops (the same schedule, parser and "
            "counting): epoll waits in epoll_pwait2 for the next send or any response; "
            "epoll-tick sleeps to the next send and reads every ready response in one "
            "epoll_wait(0); uring waits in io_uring for the next send or any completion; "
            "uring-tick waits in io_uring only for the next send and harvests every completion "
            "then (multishot recv into provided buffers, registered files, sends without "
            "completions, SINGLE_ISSUER + DEFER_TASKRUN); loadbench's engine (loadbench.run "
            "with the rate, max_connections = connections, the same send batch)",
            "Repeats": f"{repeats}, the tools in a rotating order inside each; medians (min-max)",
            "Command": f"`{command}`",
        },
        "io-uring-open-loop.jsonl",
    )
    lines += [
        "## CPU per response and lateness",
        "",
        table(
            [
                "cell",
                "tool",
                "req/s",
                "generator CPU us/resp",
                "waits/resp",
                "lateness p50 us",
                "lateness p99 us",
                "server CPU us/resp",
            ],
            rows,
        ),
        "",
        "Generator CPU: the tool's own over its exact responses in the window. Waits: the "
        "loop's sleeps (epoll_wait, clock_nanosleep, io_uring waits; the engine's wake-ups) per "
        "response. Lateness: how long after its due time each request of the window was handed "
        "to the socket (the prototype: the time of the pass that sent it; the engine: its own "
        "rate.lateness_us).",
        "",
        "## Ratios, each repeat's own",
        "",
        table(["cell"] + [f"{a} / {b}" for a, b in RATIOS], ratios),
        "",
        "Each ratio is the median (min-max) of every repeat's own ratio of two runs measured "
        "back to back. uring / epoll and uring-tick / epoll-tick below 1 are what io_uring saves "
        "a way of waiting; epoll-tick / epoll what reading at the send wake-ups saves; "
        "loadbench / epoll-tick what the engine's own work (recording, pool, phases) costs above "
        "its bare twin.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rates", default="10000,50000", help="req/s, comma-separated")
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--batch-us", type=float, default=40.0, help="the send batch, us (engine: 40)")
    args = parse_args(p, argv, "io-uring-open-loop")
    measure_and_report(
        args, argv, "bench/io_uring_open_loop.py", "io-uring-open-loop", runs, render
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
