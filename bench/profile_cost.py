#!/usr/bin/env python3
"""What a CPU profile costs the window it profiles (issue 46): the same keep-alive load against
loadbench-server plain, profiled with frame pointers (`--profile`, the default) and profiled
with DWARF unwinding, side by side - so a reader knows how far a profiled window's speed is from
the server's, and why a sweep never reports it.

    python3 bench/profile_cost.py               # -> reports/profile-cost.{md,jsonl}
    python3 bench/profile_cost.py --smoke       # 1 repeat of 0.5 s, into a temp dir

Server pinned to CPU 0 (one worker), the generator to CPU 1 (one thread). Each run: req/s, the
server's CPU per response (its tree's CPU over the window, loadbench.run's `server` block) and
the generator's; with a profile also its samples and how long writing its files took after the
window (perf script, folding, the flame graph). Repeats outermost, the modes in a rotating
order inside each; each run waits for a quiet machine (the sweep's load gate) and is measured
again when other processes took more than the contended share of its window.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import loadbench
from bench_drivers.environment_block import machine_note
from bench_drivers.gate import add_gate_args, gate_note, kept, measure_gated, outside_share
from bench_drivers.repeats import add_pinning_args, median_range
from bench_drivers.report_text import (
    add_stem_args,
    command_of,
    report_from_raw,
    report_head,
    stem_of,
)
from loadbench import analysis
from loadbench.core.server import ServerProcess
from loadbench.report.markdown import fmt_number, table

REPO = Path(__file__).resolve().parents[1]
MODES = {"plain": None, "profiled fp": "fp", "profiled dwarf": "dwarf"}


def measure(url: str, pid: int, mode: str, args: argparse.Namespace, scratch: Path) -> dict:
    call_graph = MODES[mode]
    kwargs = {}
    if call_graph is not None:
        kwargs = {
            "profile": scratch / mode.replace(" ", "-"),
            "profile_call_graph": call_graph,
            "profile_keep_data": False,
        }
    started = time.monotonic()
    r = loadbench.run(
        url, connections=args.connections, duration=args.duration, warmup=0.5,
        cpus=[args.generator_cpu], sample_pid=pid, **kwargs,
    )  # fmt: skip
    wall = time.monotonic() - started
    server = r.extras.get("server") or {}
    profile = r.extras.get("profile") or {}
    return {
        "mode": mode,
        "responses": r.responses,
        "errors": r.error_count,
        "rps": r.rps,
        "server_cpu_us_per_req": server.get("cpu_us_per_req"),
        "generator_cpu_us_per_req": r.cpu_us_per_req,
        "outside_share": outside_share(server, r.cpu_s),
        "samples": profile.get("samples"),
        "profile_error": profile.get("error"),
        # the run's wall time beyond its warm-up and window: attaching perf and writing its files
        "after_window_s": wall - args.duration - 0.5,
    }


def render(records: list[dict], env: dict, command: str) -> str:
    every = [r for r in records if r.get("record") == "run"]
    runs = kept(every)
    plain = {r["repeat"]: r for r in runs if r["mode"] == "plain"}
    rows = []
    for mode in MODES:
        group = [r for r in runs if r["mode"] == mode]
        if not group:
            continue
        ratio = [
            r["rps"] / plain[r["repeat"]]["rps"]
            for r in group
            if r["repeat"] in plain and plain[r["repeat"]]["rps"]
        ]
        rows.append(
            [
                mode,
                fmt_number(analysis.median([r["rps"] for r in group])),
                median_range(ratio, 3) + "x" if mode != "plain" else "1",
                median_range([r["server_cpu_us_per_req"] for r in group]),
                median_range([r["generator_cpu_us_per_req"] for r in group]),
                fmt_number(analysis.median([r["samples"] for r in group if r.get("samples")])),
                median_range([r["after_window_s"] for r in group], 1),
            ]
        )
    errors = sorted({r["profile_error"] for r in runs if r.get("profile_error")})
    repeats = len({r["repeat"] for r in runs})
    env = {
        **env,
        "Machine": machine_note(runs[0].get("load1_at_start", 0.0), runs[0].get("gate") or {})
        if runs
        else "n/a",
        "Load gate": gate_note(runs[0], every) if runs else "n/a",
    }
    lines = report_head(
        "What a CPU profile costs the window it profiles",
        "`bench/profile_cost.py`",
        env,
        {
            "Server": "loadbench-server, one worker, pinned to CPU 0",
            "Load": "loadbench, closed loop, HTTP/1.1 keep-alive, GET /plaintext, one thread "
            "pinned to CPU 1, 0.5 s warm-up",
            "Modes": "plain; `--profile` (perf record -F 999, frame pointers); "
            "`--profile --profile-call-graph dwarf`",
            "Repeats": f"{repeats}, modes rotating inside each; medians (min-max)",
            "Command": f"`{command}`",
        },
        "profile-cost.jsonl",
    )
    lines += [
        "## The profiled window beside a plain one",
        "",
        table(
            [
                "mode",
                "req/s",
                "req/s / plain (per repeat)",
                "server CPU us/resp",
                "generator CPU us/resp",
                "samples",
                "s after the window",
            ],
            rows,
        ),
        "",
        "req/s / plain: each repeat's profiled req/s over the same repeat's plain one, median "
        "(min-max). Server CPU us/resp: the window's (perf's own sampling is charged to the "
        "server's threads it interrupts). s after the window: the run's wall time beyond its "
        "warm-up and window - attaching perf before it, and perf script, folding and drawing "
        "after it.",
        "",
    ]
    if errors:
        lines += ["Profiles that failed: " + "; ".join(errors), ""]
    return "\n".join(lines)


def runs(args: argparse.Namespace) -> Iterator[Callable[[], dict]]:
    """Each run to measure, on one server: repeats outermost, the modes rotating inside each."""
    modes = list(MODES)
    scratch = Path(tempfile.mkdtemp(prefix="profile-cost-"))
    server = ServerProcess(workers=1, cpus=[args.server_cpu]).start()
    try:
        for repeat in range(1, args.repeats + 1):
            for mode in modes[repeat % len(modes) :] + modes[: repeat % len(modes)]:
                yield lambda mode=mode, repeat=repeat: {
                    "record": "run",
                    "repeat": repeat,
                    **measure(
                        server.url("/plaintext"), server.pid, mode, args, scratch / f"r{repeat}"
                    ),
                }
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=3.0, help="seconds per window")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--connections", type=int, default=50)
    add_pinning_args(p)
    add_stem_args(p, "profile-cost", smoke="1 repeat of 0.5 s")
    add_gate_args(p)
    args = p.parse_args(argv)
    if args.smoke:
        args.duration, args.repeats = 0.5, 1
    raw = stem_of(args, REPO, "profile-cost").with_suffix(".jsonl")
    if not args.report_only:
        measure_gated(args, raw, command_of("bench/profile_cost.py", argv), runs(args))
    report_from_raw(raw, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
