#!/usr/bin/env python3
"""What counting the server's system calls costs (issue 46: syscalls/req is on by default where
the kernel allows it, so its price must be known): the same keep-alive load against
loadbench-server with the sampler's syscall counters on and off, side by side.

    python3 bench/syscall_counting_cost.py             # -> reports/syscall-counting-cost.{md,jsonl}
    python3 bench/syscall_counting_cost.py --smoke     # 1 repeat of 0.5 s, into a temp dir

The counters (cpp/core/sampler/syscall_counter.cpp) are perf counting events on the tracepoint
raw_syscalls:sys_enter, one per server thread. While any exists the kernel takes its slower
system-call entry for every thread of the machine, the generator's included, so both sides'
CPU per response are measured: the server's (its tree's CPU clock between two snapshots taken
right around the run, divided by the run's exact responses) and the generator's (its own
threads' CPU per response). Server pinned to CPU 0 (one worker), the generator to CPU 1 (one
thread); repeats outermost, the two modes alternating inside each repeat (their order flips
every repeat), so drift hits both. Each run waits for a quiet machine (the sweep's load gate)
and is measured again when other processes took more than the contended share of its window.
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from typing import Callable, Iterator

import loadbench
from bench_drivers.environment_block import machine_note
from bench_drivers.gate import add_gate_args, gate_note, kept, measure_gated, outside_share
from bench_drivers.peers import launch_peer, registry_choices
from bench_drivers.repeats import add_pinning_args, median_range
from bench_drivers.report_text import (
    add_stem_args,
    command_of,
    report_from_raw,
    report_head,
    stem_of,
)
from loadbench import analysis
from loadbench.core.sampler import Sampler
from loadbench.report.markdown import fmt_number, table

REPO = Path(__file__).resolve().parents[1]
MODES = ("off", "on")


def measure(url: str, pid: int, mode: str, connections: int, seconds: float, cpu: int) -> dict:
    sampler = Sampler(pid, syscalls=mode == "on")
    try:
        # warm the connections and the server's caches outside the measured span
        loadbench.run(url, connections=connections, duration=0.3, cpus=[cpu])
        before = sampler.snapshot()
        r = loadbench.run(url, connections=connections, duration=seconds, cpus=[cpu])
        after = sampler.snapshot()
    finally:
        del sampler  # its counters close: the tracepoint is off again for the next mode
        gc.collect()
    window = loadbench.sampler.window(before, after, r.responses)
    return {
        "outside_share": outside_share(window, r.cpu_s),
        "mode": mode,
        "connections": connections,
        "responses": r.responses,
        "errors": r.error_count,
        "rps": r.rps,
        "server_cpu_us_per_req": window["cpu_us_per_req"],
        "generator_cpu_us_per_req": r.cpu_us_per_req,
        "syscalls_per_req": window.get("syscalls_per_req"),
        "syscalls_na": window.get("syscalls_na"),
    }


def runs(args: argparse.Namespace) -> Iterator[Callable[[], dict]]:
    """Each run to measure: repeats outermost, each server started afresh per repeat, the two
    modes of every cell back to back (their order flips every repeat)."""
    peers_dir = REPO / "bench" / "peers"
    choices = registry_choices([(p, "http") for p in args.servers.split(",")], peers_dir)
    for repeat in range(1, args.repeats + 1):
        order = MODES if repeat % 2 else MODES[::-1]
        for choice in choices:
            with launch_peer(choice, cpus=[args.server_cpu], peers_dir=peers_dir) as peer:
                for c in (int(x) for x in args.connections.split(",")):
                    for mode in order:
                        yield lambda mode=mode, c=c, peer=peer, repeat=repeat: {
                            "record": "run",
                            "repeat": repeat,
                            "server": peer.name,
                            **measure(
                                peer.url("/plaintext"), peer.pid, mode, c, args.duration,
                                args.generator_cpu,
                            ),
                        }  # fmt: skip


def _server(record: dict) -> str:
    return record.get("server", "loadbench-server")  # runs recorded before --servers


def _ratio(pair: dict, key: str) -> float | None:
    on, off = pair["on"].get(key), pair["off"].get(key)
    return on / off if on and off else None


def render(records: list[dict], env: dict, command: str) -> str:
    every = [r for r in records if r.get("record") == "run"]
    runs = kept(every)
    rows = []
    cells = sorted({(_server(r), r["connections"]) for r in runs})
    for server, c in cells:
        name = f"{server} c = {c}"
        medians = {}
        for mode in MODES:
            group = [
                r
                for r in runs
                if (_server(r), r["connections"]) == (server, c) and r["mode"] == mode
            ]
            srv = [r["server_cpu_us_per_req"] for r in group]
            gen = [r["generator_cpu_us_per_req"] for r in group]
            medians[mode] = (analysis.median(srv), analysis.median(gen))
            rows.append(
                [
                    name,
                    mode,
                    fmt_number(analysis.median([r["rps"] for r in group])),
                    median_range(srv),
                    median_range(gen),
                    median_range([r["syscalls_per_req"] for r in group]),
                ]
            )
        off, on = medians["off"], medians["on"]
        if None not in off + on:
            rows.append(
                [
                    name,
                    "on / off (medians)",
                    "",
                    f"{on[0] / off[0]:.3f}x",
                    f"{on[1] / off[1]:.3f}x",
                    "",
                ]
            )
        # each repeat's two runs side by side: drift between repeats cancels
        pairs = [
            {
                r["mode"]: r
                for r in runs
                if (_server(r), r["connections"], r["repeat"]) == (server, c, repeat)
            }
            for repeat in sorted({r["repeat"] for r in runs})
        ]
        pairs = [p for p in pairs if set(p) == set(MODES)]
        if pairs:
            rows.append(
                [
                    name,
                    "on / off (per repeat)",
                    "",
                    median_range([_ratio(p, "server_cpu_us_per_req") for p in pairs], 3) + "x",
                    median_range([_ratio(p, "generator_cpu_us_per_req") for p in pairs], 3) + "x",
                    "",
                ]
            )
    repeats = len({r["repeat"] for r in runs})
    first = runs[0].get("gate") or {} if runs else {}
    env = {
        **env,
        "Machine": machine_note(runs[0].get("load1_at_start", 0.0) if runs else 0.0, first),
        "Load gate": gate_note(runs[0], every) if runs else "n/a",
    }
    lines = report_head(
        "What counting the server's system calls costs",
        "`bench/syscall_counting_cost.py`",
        env,
        {
            "Servers": ", ".join(sorted({_server(r) for r in runs}))
            + " (bench/peers registry), one worker each, pinned to CPU 0",
            "Load": "loadbench, closed loop, HTTP/1.1 keep-alive, GET /plaintext, one thread "
            "pinned to CPU 1",
            "Modes": "the sampler's syscall counters off (Sampler(pid, syscalls=False)) and on "
            "(the default)",
            "Repeats": f"{repeats}, modes alternating inside each; medians (min-max)",
            "Command": f"`{command}`",
        },
        "syscall-counting-cost.jsonl",
    )
    lines += [
        "## CPU per response with the counters off and on",
        "",
        table(
            [
                "cell",
                "counters",
                "req/s",
                "server CPU us/resp",
                "generator CPU us/resp",
                "syscalls/resp",
            ],
            rows,
        ),
        "",
        "Server CPU: its tree's CPU between snapshots right around each run, divided by the "
        "run's exact responses. On / off (medians): the ratio of the two medians; per repeat: "
        "the median (min-max) of each repeat's own ratio, its two runs measured back to back - "
        "the figure drift between repeats does not move. Where the per-repeat median is within "
        "its own min-max of 1.0 on both sides, counting costs less than this machine resolves.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=5.0, help="seconds per run")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--connections", default="10,50")
    p.add_argument(
        "--servers",
        default="beast",
        help="bench/peers registry servers, comma-separated (default: beast, loadbench-server)",
    )
    add_pinning_args(p)
    add_stem_args(p, "syscall-counting-cost", smoke="1 repeat of 0.5 s")
    add_gate_args(p)
    args = p.parse_args(argv)
    if args.smoke:
        args.duration, args.repeats = 0.5, 1
    raw = stem_of(args, REPO, "syscall-counting-cost").with_suffix(".jsonl")
    if not args.report_only:
        measure_gated(args, raw, command_of("bench/syscall_counting_cost.py", argv), runs(args))
    report_from_raw(raw, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
