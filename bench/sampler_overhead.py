"""The sampler's own CPU cost: sample a 4-process tree at 10 Hz and read the CPU clock of
the sampling thread (issue 4 item 5; aim: under 0.5 % of one core).

    python3 bench/sampler_overhead.py                 # 30 s, 10 Hz, sh + 3 sleeping children
    python3 bench/sampler_overhead.py --duration 10 --interval 0.05 --out reports/sampler_overhead.json

The tree is `sh -c 'sleep & sleep & sleep & wait'`: four processes, idle, so the figure is the
sampler's cost alone (every sample re-lists /proc and reads stat, status, fd/ and task/ of each
member plus /proc/stat and /proc/loadavg).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import loadbench


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--duration", type=float, default=30.0, help="seconds to sample (default 30)"
    )
    parser.add_argument(
        "--interval", type=float, default=0.1, help="sampling interval in seconds (default 0.1)"
    )
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()

    hold = args.duration + 30
    tree = subprocess.Popen(["sh", "-c", f"sleep {hold} & sleep {hold} & sleep {hold} & wait"])
    members: list[int] = []
    try:
        deadline = time.monotonic() + 5
        sampler = loadbench.Sampler(tree.pid, interval=args.interval, tree=True)
        while len(sampler.snapshot().pids) < 4:
            if time.monotonic() > deadline:
                raise SystemExit("the 4-process tree did not come up")
            time.sleep(0.01)
        members = sampler.snapshot().pids
        processes = len(members)
        with sampler:
            time.sleep(args.duration)
        totals = sampler.totals()
    finally:
        for pid in members[1:]:  # the sleeping children, by pid
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        tree.kill()
        tree.wait()

    samples = totals["samples"]
    cpu = totals["sampler_cpu_s"]
    wall = totals["duration_s"]
    result = {
        "processes": processes,
        "interval_s": args.interval,
        "duration_s": wall,
        "samples": samples,
        "sampler_cpu_s": cpu,
        "proc_listings": totals["proc_listings"],
        "cpu_us_per_sample": cpu * 1e6 / samples if samples else None,
        "core_share_percent": 100.0 * cpu / wall if wall else None,
        "loadavg_1m": os.getloadavg()[0],
        "cpu_model": loadbench.environment().cpu_model,
    }
    print(
        f"sampler overhead: {result['core_share_percent']:.3f} % of one core "
        f"({cpu * 1e3:.1f} ms CPU over {wall:.1f} s, {samples} samples at {1 / args.interval:g} Hz, "
        f"{result['cpu_us_per_sample']:.0f} us per sample, {processes}-process tree; /proc re-listed in "
        f"{totals['proc_listings']} readings: a pid was allocated on the machine since the previous one)"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
