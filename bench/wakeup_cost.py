#!/usr/bin/env python3
"""What one sleep and wake-up of a pinned thread costs this machine in CPU: the floor under an
open loop's cost per response (issue 45).

    python3 bench/wakeup_cost.py               # -> reports/wakeup-cost.{md,jsonl}
    python3 bench/wakeup_cost.py --smoke       # 1 repeat of 0.3 s per interval, into a temp dir

A thread pinned to one CPU (timer slack 1 ns, as the engine's open loop sets it) sleeps to
absolute deadlines `interval` apart (clock_nanosleep, TIMER_ABSTIME: what the engine's
batch_reads loop does between sends) and does nothing else. Its CPU per wake-up, less the same
loop's cost per pass without sleeping, is what the kernel (and on a VM the hypervisor) charge
the thread for one sleep and wake-up; how late each wake-up came is the floor of an open loop's
lateness. An open loop that sends on time wakes at least once per `interval` it allows its sends
to be late by, so at R requests per second its CPU per response is at least
closed-loop cost + wake-up cost / (R x interval) - the bound reports/generator-open-loop-*.md is
read against.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from pathlib import Path

from bench_drivers.environment_block import environment
from bench_drivers.jsonl import JsonlWriter, read_jsonl
from bench_drivers.report_text import (
    add_stem_args,
    command_of,
    report_head,
    stem_of,
    write_report,
)
from loadbench import analysis
from loadbench.report.markdown import fmt_number, table

REPO = Path(__file__).resolve().parents[1]
INTERVALS_US = (20, 40, 100, 200, 1000)
PR_SET_TIMERSLACK = 29


def loop_pass_cost_us(seconds: float) -> float:
    """CPU per pass of the measuring loop without its sleep: the bookkeeping subtracted below."""
    clock, target, passes = time.monotonic_ns, time.monotonic_ns(), 0
    start, until = time.thread_time_ns(), target + int(seconds * 1e9)
    while True:
        now = clock()
        if now >= until:
            break
        target += 1
        _ = target - now
        passes += 1
    return (time.thread_time_ns() - start) / 1e3 / passes


def measure(interval_us: int, seconds: float) -> dict:
    step = interval_us * 1000
    late: list[int] = []
    cpu0, wall0 = time.thread_time_ns(), time.monotonic_ns()
    target, until = wall0, wall0 + int(seconds * 1e9)
    while target < until:
        target += step
        wait = target - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)  # clock_nanosleep to the absolute deadline (CPython 3.11)
        late.append(time.monotonic_ns() - target)
    cpu = time.thread_time_ns() - cpu0
    late.sort()
    return {
        "interval_us": interval_us,
        "wakeups": len(late),
        "wall_s": (time.monotonic_ns() - wall0) / 1e9,
        "cpu_us_per_wakeup": cpu / 1e3 / len(late),
        "late_p50_us": late[len(late) // 2] / 1e3,
        "late_p99_us": late[int(len(late) * 0.99)] / 1e3,
    }


def render(records: list[dict], env: dict, command: str) -> str:
    runs = [r for r in records if r.get("record") == "run"]
    base = analysis.median([r["pass_us"] for r in records if r.get("record") == "pass"])
    rows = []
    for interval in sorted({r["interval_us"] for r in runs}):
        group = [r for r in runs if r["interval_us"] == interval]
        cpu = analysis.median([r["cpu_us_per_wakeup"] for r in group])
        spread = [r["cpu_us_per_wakeup"] for r in group]
        rows.append(
            [
                f"{interval} us",
                fmt_number(analysis.median([r["wakeups"] / r["wall_s"] for r in group])),
                f"{cpu:.1f} ({min(spread):.1f}-{max(spread):.1f})",
                f"{cpu - base:.1f}" if base is not None else "n/a",
                f"{100 * cpu * 1e-6 * (1e6 / interval):.0f} %",
                fmt_number(analysis.median([r["late_p50_us"] for r in group]), 1),
                fmt_number(analysis.median([r["late_p99_us"] for r in group]), 1),
            ]
        )
    lines = report_head(
        "What a sleep and wake-up costs this machine",
        "`bench/wakeup_cost.py`",
        env,
        {
            "Thread": "one, pinned to CPU 1, timer slack 1 ns",
            "Sleep": "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to deadlines one interval apart",
            "Repeats": f"{len(runs) // max(1, len({r['interval_us'] for r in runs}))}, medians (min-max)",
            "Command": f"`{command}`",
        },
        "wakeup-cost.jsonl",
    )
    lines += [
        "## CPU per wake-up",
        "",
        "CPU: the thread's own CPU clock per wake-up (user and system, the kernel's and the "
        "hypervisor's share that the guest sees charged to it); less the loop: minus the "
        f"measuring loop's own cost per pass without sleeping ({base:.2f} us in CPython); busy: "
        "that CPU as a share of one core at one wake-up per interval. Late: how long after its "
        "deadline each wake-up came.",
        "",
        table(
            [
                "interval",
                "wake-ups/s",
                "CPU us/wake-up",
                "less the loop",
                "busy",
                "late p50 us",
                "late p99 us",
            ],
            rows,
        ),  # fmt: skip
        "",
        "An open loop whose sends may be at most one interval late wakes at least once per "
        "interval while requests come faster than that, so at R req/s its CPU per response is "
        "at least its closed loop's plus this CPU divided by R x interval.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=3.0, help="seconds per interval and repeat")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cpu", type=int, default=1, help="the CPU to pin the thread to")
    add_stem_args(p, "wakeup-cost", smoke="1 repeat of 0.3 s")
    args = p.parse_args(argv)
    if args.smoke:
        args.duration, args.repeats = 0.3, 1
    out = stem_of(args, REPO, "wakeup-cost")
    command = command_of("bench/wakeup_cost.py", argv)
    if not args.report_only:
        os.sched_setaffinity(0, {args.cpu})
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
        env = environment()
        jsonl = JsonlWriter(out.with_suffix(".jsonl"))
        jsonl.write({"record": "environment", "environment": env, "command": command})
        for repeat in range(1, args.repeats + 1):
            jsonl.write({"record": "pass", "repeat": repeat, "pass_us": loop_pass_cost_us(0.3)})
            for interval in INTERVALS_US:  # repeats outermost: drift hits every interval
                record = {"record": "run", "repeat": repeat, **measure(interval, args.duration)}
                jsonl.write(record)
                print(record, flush=True)
        jsonl.close()
    records, env, command = read_jsonl(out.with_suffix(".jsonl"))
    write_report(out.with_suffix(".md"), render(records, env, command))
    print(out.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
