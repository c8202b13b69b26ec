"""Accept strategy of the Beast server: SO_REUSEPORT listener per worker vs one shared listener.

loadbench-server --workers 2 pinned to CPU 0, wrk pinned to CPU 1 (the 2-core layout of the
other server benchmarks). For each strategy and workload: CPU us/req (server utime+stime from
/proc/<pid>/stat around the window / wrk's exact request count), req/s, and how evenly the two
worker threads shared the work (busier worker's share of the worker CPU time).
Workloads: keep-alive (c=50) and a new connection per request (wrk -H "Connection: close").

    python3 bench/server_accept_strategy.py [--seconds 5] [--repeats 3] [--out reports/server-accept-strategy.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from loadbench import analysis, server_binary

TICKS = os.sysconf("SC_CLK_TCK")
WORKLOADS = {"keep-alive": [], "close": ["-H", "Connection: close"]}


def thread_ticks(pid: int) -> dict[int, int]:
    """utime+stime per thread, in clock ticks."""
    ticks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        ticks[int(tid)] = int(fields[11]) + int(fields[12])
    return ticks


def wrk(port: int, seconds: int, conns: int, extra: list[str]) -> tuple[int, float]:
    argv = [
        "taskset",
        "-c",
        "1",
        "wrk",
        "-t1",
        f"-c{conns}",
        f"-d{seconds}s",
        *extra,
        f"http://127.0.0.1:{port}/plaintext",
    ]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30).stdout
    count = re.search(r"(\d+) requests in", out)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not count or not rate:
        raise RuntimeError(f"wrk printed no result: {out}")
    return int(count.group(1)), float(rate.group(1))


def one_run(strategy: str, workload: str, seconds: int, conns: int) -> dict:
    proc = subprocess.Popen(
        ["taskset", "-c", "0", str(server_binary()), "--workers", "2", "--accept", strategy],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready = json.loads(proc.stdout.readline())
        port = ready["http_port"]
        wrk(port, 1, conns, WORKLOADS[workload])  # warm-up
        before = thread_ticks(proc.pid)
        requests, rps = wrk(port, seconds, conns, WORKLOADS[workload])
        after = thread_ticks(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    per_thread = sorted((after[t] - before.get(t, 0) for t in after), reverse=True)
    workers = per_thread[:2]
    total = sum(per_thread)
    return {
        "strategy": strategy,
        "workload": workload,
        "requests": requests,
        "rps": rps,
        "us_per_req": total / TICKS * 1e6 / requests,
        "busier_worker_share": workers[0] / sum(workers) if sum(workers) else None,
    }


def median(values: list[Optional[float]]) -> Optional[float]:
    return analysis.median(values)  # the one median of loadbench


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--out", type=Path, help="write the markdown result here too")
    args = parser.parse_args(argv)
    runs = []
    for _repeat in range(args.repeats):  # interleaved, so drifting machine load hits both alike
        for workload in WORKLOADS:
            for strategy in ("reuseport", "shared"):
                run = one_run(strategy, workload, args.seconds, args.connections)
                runs.append(run)
                print(json.dumps(run), file=sys.stderr, flush=True)
    lines = [
        "# Beast server accept strategy: SO_REUSEPORT per worker vs one shared listener",
        "",
        f"`loadbench-server --workers 2` on CPU 0, `wrk -t1 -c{args.connections} -d{args.seconds}s` on CPU 1, "
        f"/plaintext, median of {args.repeats} interleaved runs. {platform.node()}, load average at end "
        f"{os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        f"Command: `python3 bench/server_accept_strategy.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
        "",
        "| workload | accept | req/s | CPU us/req | busier worker's share |",
        "|---|---|---:|---:|---:|",
    ]
    for workload in WORKLOADS:
        for strategy in ("reuseport", "shared"):
            cell = [r for r in runs if r["workload"] == workload and r["strategy"] == strategy]
            share = median([r["busier_worker_share"] for r in cell])
            lines.append(
                f"| {workload} | {strategy} | {median([r['rps'] for r in cell]):.0f} | "
                f"{median([r['us_per_req'] for r in cell]):.2f} | {share:.2f} |"
            )

    def cost(workload: str, strategy: str) -> float:
        return median(
            [
                r["us_per_req"]
                for r in runs
                if r["workload"] == workload and r["strategy"] == strategy
            ]
        )

    lines += [
        "",
        "Reading: with keep-alive the accept path is off the request path, so both strategies should cost "
        f"the same per request ({cost('keep-alive', 'reuseport'):.2f} vs {cost('keep-alive', 'shared'):.2f} us). "
        "With a connection per request, `shared` makes worker 0 accept for everyone and hand each "
        "socket over (a post to the other worker), which shows as the busier worker's share above 0.5 "
        f"and as cost ({cost('close', 'shared'):.2f} vs {cost('close', 'reuseport'):.2f} us/req for reuseport). "
        "SO_REUSEPORT lets the kernel spread connections (by 4-tuple hash) with nothing shared between "
        "workers; it is the default, `--accept shared` remains selectable.",
    ]
    lines += ["", "Raw runs (JSON lines):", "", "```", *(json.dumps(r) for r in runs), "```", ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
