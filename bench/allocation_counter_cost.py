"""What the allocation counter costs the server it counts: the Beast server's CPU us/req with the
counter off and on, side by side (issue 31 item 4; aim: at most +2 % at keep-alive).

    python3 bench/allocation_counter_cost.py                  # 15 pairs of 3 s windows per case
    python3 bench/allocation_counter_cost.py -r 3 -d 1 --out /tmp/cost   # a quick look

Two Beast servers, one with the counter preloaded (loadbench serve --allocations) and one
without, both pinned to the same CPU and the generator to the other; the windows alternate
off / on so drift in the machine falls on both alike. Cases: HTTP/1.1 keep-alive (the Beast path
that allocates nothing per request: the counter's cost there is its presence), HTTP/1.1 with a
connection per request (one allocation per request) and h2c with 10 streams (about five per
request: the counter's per-call cost shows). Each window's CPU us/req is the server tree's CPU
in the window over its exact responses (loadbench.run's server block); the report gives the
medians, the spread and on / off.

Writes reports/allocation-counter-cost.md and every window to reports/allocation-counter-cost.jsonl.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import loadbench
from bench_drivers.checkout import reports_dir
from bench_drivers.environment_block import environment
from bench_drivers.gate import (
    add_gate_args,
    gate_note,
    kept,
    make_gate,
    measure_uncontended,
    wait_quiet,
)
from bench_drivers.jsonl import JsonlWriter, read_jsonl
from bench_drivers.repeats import summarize
from bench_drivers.report_text import report_head, write_report
from loadbench.report.comparison import hodges_lehmann
from loadbench.report.markdown import table

CASES = {
    # name: (run options, what it shows)
    "h1 keep-alive": ({"connections": 25}, "no allocation per request: the counter's presence"),
    "h1 connection per request": (
        {"connections": 4, "keepalive": False},
        "one allocation per request",
    ),
    "h2c, 10 streams": (
        {"connections": 4, "protocol": "h2", "streams": 10},
        "about five allocations per request",
    ),
}


def measure(server: loadbench.ServerProcess, counted: bool, case: str, duration: float) -> dict:
    options, _ = CASES[case]
    result = loadbench.run(
        server.url("/plaintext"),
        duration=duration,
        warmup=0.5,
        cpus=[1],
        sample_pid=server.pid,
        **options,
    )
    block = result.extras["server"]
    allocations = block.get("allocations") or {}
    return {
        "case": case,
        "counter": "on" if counted else "off",
        "responses": result.responses,
        "errors": result.errors,
        "rps": result.rps,
        "server_cpu_s": block["cpu_s"],
        "cpu_us_per_req": block["cpu_us_per_req"],
        "allocs_per_req": allocations.get("calls_per_req"),
        "outside_share": loadbench.core.analysis.outside_share(block, os.cpu_count() or 1),
    }


def report(records: list[dict], env: dict, command: str, settings: dict) -> str:
    rows = []
    for case, (_, what) in CASES.items():
        off = summarize(
            r["cpu_us_per_req"]
            for r in kept(records)
            if r["case"] == case and r["counter"] == "off"
        )
        on = summarize(
            r["cpu_us_per_req"] for r in kept(records) if r["case"] == case and r["counter"] == "on"
        )
        allocs = summarize(
            r["allocs_per_req"] for r in kept(records) if r["case"] == case and r["counter"] == "on"
        )
        if off is None or on is None:
            continue
        shift = hodges_lehmann(
            [
                r["cpu_us_per_req"]
                for r in kept(records)
                if r["case"] == case and r["counter"] == "off"
            ],
            [
                r["cpu_us_per_req"]
                for r in kept(records)
                if r["case"] == case and r["counter"] == "on"
            ],
        )
        interval = (
            "n/a"
            if shift is None
            else f"{100 * shift[0] / off.median:+.1f} % ({100 * shift[1] / off.median:+.1f} to "
            f"{100 * shift[2] / off.median:+.1f} %, {100 * shift[3]:.0f} %)"
        )
        rows.append(
            [
                case,
                what,
                f"{off.median:.3f} ({off.low:.3f}-{off.high:.3f})",
                f"{on.median:.3f} ({on.low:.3f}-{on.high:.3f})",
                f"{100 * (on.median / off.median - 1):+.1f} %",
                interval,
                "n/a" if allocs is None else f"{allocs.median:.4g}",
                str(on.count),
            ]
        )
    lines = report_head(
        "What the allocation counter costs the server it counts",
        command,
        env,
        settings,
        "allocation-counter-cost.jsonl: every window, superseded contended attempts marked",
    )
    lines += [
        "## Result",
        "",
        "The embedded Beast server (1 worker, CPU 0), the generator on CPU 1; a server with the "
        "counter preloaded and one without, windows alternating off / on. Server CPU us/req: its "
        "tree's CPU in the window over the window's exact responses; median of the pairs (lowest-"
        "highest). The shift is the Hodges-Lehmann estimate of on - off (the median of every "
        "pairwise difference) with its distribution-free interval at about 95 % (the exact "
        "coverage in brackets), as a share of the off median - what `loadbench compare` uses: "
        "where the interval holds 0 the counter's cost is not told apart from the noise, and its "
        "upper end is the most it can cost at that confidence.",
        "",
        table(
            [
                "Case",
                "Allocations",
                "CPU us/req, counter off",
                "CPU us/req, counter on",
                "on / off (medians)",
                "shift on - off (Hodges-Lehmann, interval, coverage)",
                "allocs/req (on)",
                "windows",
            ],
            rows,
        ),
        "",
        f"Load gate: {gate_note(records[0].get('gate', {}) if records else {}, records)}.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-r", "--repeats", type=int, default=15, help="off/on pairs per case (default 15)"
    )
    parser.add_argument(
        "-d", "--duration", type=float, default=3.0, help="seconds per window (default 3)"
    )
    parser.add_argument(
        "--out", type=Path, help="STEM for .md/.jsonl (default reports/allocation-counter-cost)"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the .md from the .jsonl"
    )
    add_gate_args(parser)
    args = parser.parse_args()
    stem = args.out or reports_dir() / "allocation-counter-cost"
    command = "python3 bench/allocation_counter_cost.py " + " ".join(sys.argv[1:])
    settings = {
        "Windows": f"{args.repeats} off/on pairs per case, {args.duration:g} s each after 0.5 s warm-up",
        "Server": "loadbench-server, 1 worker, pinned to CPU 0 (off and on: the same binary)",
        "Generator": "loadbench run, pinned to CPU 1",
    }
    jsonl_path = stem.with_suffix(".jsonl")
    if args.report_only:
        records, env, command = read_jsonl(jsonl_path)
        write_report(stem.with_suffix(".md"), report(records, env, command, settings))
        return 0
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("allocation_counter_cost: needs 2 CPUs (server on 0, generator on 1)")
    gate = make_gate(args)
    first = wait_quiet(gate)
    env = environment()
    jsonl = JsonlWriter(jsonl_path)
    jsonl.write({"record": "environment", "environment": env, "command": command})
    records: list[dict] = []
    with (
        loadbench.ServerProcess(cpus=[0]) as off,
        loadbench.ServerProcess(cpus=[0], allocations=True) as on,
    ):
        for case in CASES:
            for repeat in range(args.repeats):
                for counted, server in ((False, off), (True, on)):
                    record = measure_uncontended(
                        gate,
                        args.contended_retries,
                        lambda s=server, on=counted, c=case, r=repeat: {
                            **measure(s, on, c, args.duration),
                            "repeat": r,
                        },
                        jsonl,
                        records,
                    )
                    print(
                        f"{case:28} counter {record['counter']:3}  {record['cpu_us_per_req']:.3f} us/req"
                        f"  {record['rps']:,.0f} req/s  allocs/req {record['allocs_per_req']}",
                        flush=True,
                    )
    records[0].setdefault("gate", first)
    jsonl.close()
    write_report(stem.with_suffix(".md"), report(records, env, command, settings))
    print(f"wrote {stem.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
