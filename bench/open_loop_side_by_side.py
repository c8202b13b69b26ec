#!/usr/bin/env python3
"""The open loop of one generator core, side by side: loadbench busy-poll and its sleeping tick,
wrk2 and oha, at the same rates, connections and pinning, against Beast and nginx (issue 59).

    WRK2=/path/to/wrk2/wrk python3 bench/open_loop_side_by_side.py   # -> reports/open-loop-side-by-side.{md,jsonl} (~12 min)
    python3 bench/open_loop_side_by_side.py --smoke                  # 1 repeat, 1 s, Beast, a temp dir
    python3 bench/open_loop_side_by_side.py --report-only            # the report again from the raw data

Each server runs pinned to CPU 0 with one worker, fresh for every repeat; each tool runs as its
own process pinned to CPU 1 with one thread, over the same fixed pool of connections (wrk2's
model: loadbench with --max-connections C), for the same seconds (wrk2 first calibrates for 10 s
more, as it always does). For every run: the responses the tool itself counted, the rate it
reached, its own latency percentiles (from the intended send time: coordinated-omission
corrected, all three), its CPU per response from os.wait4()'s rusage (the same for every tool:
process start and exit included), and for loadbench the sends' lateness (due time -> bytes handed
to the socket), which neither wrk2 nor oha reports. A busy-polling thread holds its whole core,
so its CPU per response is the core's; the share it spent working is beside it. wrk2 is in no
registry: built from giltene/wrk2 and named with WRK2= (skipped without it); oha: `cargo install
oha` (skipped when not on PATH).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Optional

from bench_drivers.environment_block import environment, machine_note
from bench_drivers.gate import add_gate_args, make_gate, wait_quiet
from bench_drivers.generators import Generator, Loadbench, Oha, Wrk2
from bench_drivers.jsonl import JsonlWriter, read_jsonl
from bench_drivers.peers import launch_peer, registry_choices
from bench_drivers.report_text import command_of, report_head, write_report
from loadbench import analysis
from loadbench.report.markdown import fmt_number, table

REPO = Path(__file__).resolve().parents[1]
PEERS = REPO / "bench" / "peers"
SERVER_CPU, GENERATOR_CPU = 0, 1
ON_TIME_US = 50.0  # issue 59's bar for the sends' lateness p99
KEPT_RATE = 0.95  # a tool kept the rate when it answered this share of it (wrk2 counts its start-up in its span)


class LoadbenchLoop(Loadbench):
    """`loadbench run` with its open loop's loop chosen: busy-poll or the sleeping tick."""

    def __init__(self, busy: bool) -> None:
        super().__init__()
        self.busy = busy
        self.name = "loadbench busy-poll" if busy else "loadbench tick"

    def argv(self, url, connections, duration_s, keepalive, out):
        return super().argv(url, connections, duration_s, keepalive, out) + [
            "--busy-poll" if self.busy else "--no-busy-poll"
        ]

    def parse(self, run, out):
        result = super().parse(run, out)
        data = json.loads(out.read_text())
        result.extra.update(
            work_share=data["generator"].get("work_share"),
            work_us_per_req=data["generator"].get("work_us_per_req"),
            loop=data["config"].get("loop"),
        )
        return result


def tools(names: Optional[str] = None) -> list[Generator]:
    """Every tool, or those named (--tools: a comma-separated list of their names)."""
    every = [LoadbenchLoop(True), LoadbenchLoop(False), Wrk2(), Oha()]
    if not names:
        return every
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = set(wanted) - {t.name for t in every}
    if unknown:
        raise SystemExit(
            f"--tools: unknown {', '.join(sorted(unknown))} (one of: {', '.join(t.name for t in every)})"
        )
    return [t for t in every if t.name in wanted]


def measure(tool: Generator, url: str, rate: float, args) -> dict:
    tool.rate = rate
    child, result = tool.run(url, args.connections, args.duration, True, [GENERATOR_CPU])
    rate_block = result.extra.get("rate") or {}
    lateness = rate_block.get("lateness_us") or {}
    loop = rate_block.get("loop_lateness_us") or {}
    latency = result.latency_us
    return {
        "tool": tool.name,
        "rate": rate,
        "responses": result.responses,
        "errors": result.errors,
        "non_2xx": result.non_2xx,
        "duration_s": result.duration_s,
        "rps": result.rps,
        "latency_p50_us": latency.get("p50") or latency.get("p50.0"),
        "latency_p99_us": latency.get("p99") or latency.get("p99.0"),
        "latency_p999_us": latency.get("p99.9"),
        "cpu_s": child.cpu_s,
        "wall_s": child.wall_s,
        # loadbench: its threads' CPU inside its window (Python's start-up is not the loop's);
        # the others: the process's, start-up included (small beside their runs)
        "cpu_us_per_resp": result.extra.get("self_cpu_us_per_req")
        or (child.cpu_s * 1e6 / result.responses if result.responses else None),
        "work_us_per_resp": result.extra.get("work_us_per_req"),
        "busy": child.busy,
        # loadbench only: the sends' lateness and what its thread spent working
        "due": rate_block.get("due"),
        "sends": rate_block.get("sends"),
        "late_sends": rate_block.get("late_sends"),
        "unfinished": result.extra.get("unfinished"),
        "lateness_p50_us": lateness.get("p50"),
        "lateness_p99_us": lateness.get("p99"),
        "lateness_p999_us": lateness.get("p99.9"),
        "loop_lateness_p99_us": loop.get("p99"),
        "work_share": result.extra.get("work_share"),
        "loop": result.extra.get("loop"),
    }


def on_time(r: dict) -> Optional[bool]:
    """loadbench: every due request sent and answered, none failed, lateness p99 under the bar.
    The others report no send lateness: None."""
    if r.get("lateness_p99_us") is None:
        return None
    return (
        r["errors"] == 0
        and r["sends"] == r["due"]
        and r["responses"] == r["due"]
        and r["lateness_p99_us"] < ON_TIME_US
    )


def loop_on_time(r: dict) -> Optional[bool]:
    """loadbench: every due request sent, none failed, and its loop released them within the bar
    (p99) - the generator's own part of the lateness; the rest is the wait for a free connection
    of the fixed pool, which a server that cannot answer the rate holds. Others: None."""
    if r.get("loop_lateness_p99_us") is None:
        return None
    return r["errors"] == 0 and r["sends"] == r["due"] and r["loop_lateness_p99_us"] < ON_TIME_US


def kept_rate(r: dict) -> bool:
    return r["errors"] == 0 and r["non_2xx"] == 0 and r["rps"] >= KEPT_RATE * r["rate"]


def render(records: list[dict], env: dict, command: str, raw_name: str) -> str:
    runs = [r for r in records if r.get("record") == "run"]
    skipped = [r for r in records if r.get("record") == "skipped"]
    servers = sorted({r["server"] for r in runs})
    names = [
        t
        for t in ("loadbench busy-poll", "loadbench tick", "wrk2", "oha")
        if any(r["tool"] == t for r in runs)
    ]
    rates = sorted({r["rate"] for r in runs})

    def group(server, tool, rate):
        return [r for r in runs if (r["server"], r["tool"], r["rate"]) == (server, tool, rate)]

    def med(rows, key, digits=0):
        values = [r[key] for r in rows if r.get(key) is not None]
        if not values:
            return "n/a"
        m = analysis.median(values)
        spread = (
            f" ({fmt_number(min(values), digits)}-{fmt_number(max(values), digits)})"
            if len(values) > 1
            else ""
        )
        return fmt_number(m, digits) + spread

    def ceiling(server, tool, verdict):
        best = None
        for rate in rates:
            rows = group(server, tool, rate)
            if not rows:
                continue
            if not all(verdict(r) if verdict(r) is not None else kept_rate(r) for r in rows):
                break
            best = rate
        return "none" if best is None else fmt_number(best)

    ceilings = [
        [
            server,
            tool,
            ceiling(server, tool, on_time),
            ceiling(server, tool, loop_on_time) if tool.startswith("loadbench") else "n/a",
        ]
        for server in servers
        for tool in names
    ]
    body = []
    for server in servers:
        for rate in rates:
            for tool in names:
                rows = group(server, tool, rate)
                if not rows:
                    continue
                verdicts = [on_time(r) for r in rows]
                body.append(
                    [
                        server,
                        fmt_number(rate),
                        tool,
                        med(rows, "rps"),
                        med(rows, "lateness_p99_us"),
                        med(rows, "lateness_p999_us"),
                        med(rows, "loop_lateness_p99_us"),
                        med(rows, "latency_p50_us"),
                        med(rows, "latency_p99_us"),
                        med(rows, "cpu_us_per_resp", 2),
                        med(rows, "work_us_per_resp", 2),
                        (
                            f"{100 * analysis.median([r['work_share'] for r in rows]):.0f} %"
                            if all(r.get("work_share") is not None for r in rows)
                            else f"{100 * analysis.median([r['busy'] for r in rows]):.0f} %"
                        ),
                        " / ".join("n/a" if v is None else ("yes" if v else "no") for v in verdicts)
                        if any(v is not None for v in verdicts)
                        else " / ".join("kept" if kept_rate(r) else "short" for r in rows),
                    ]
                )
    lines = report_head(
        "The open loop of one generator core, side by side",
        "`bench/open_loop_side_by_side.py`",
        env,
        {
            "Pinning": f"server on CPU {SERVER_CPU} (one worker, fresh per repeat); each tool one "
            f"thread on CPU {GENERATOR_CPU}",
            "On time": f"loadbench: every due request sent and answered, none failed, send "
            f"lateness p99 < {ON_TIME_US:g} us in every repeat; wrk2 and oha report no send "
            f"lateness: they count as keeping a rate when they answered >= {100 * KEPT_RATE:g} % "
            "of it without an error",
            "Command": f"`{command}`",
            **(
                {"Skipped": "; ".join(sorted({f"{r['tool']}: {r['why']}" for r in skipped}))}
                if skipped
                else {}
            ),
        },
        raw_name,
    )
    lines += [
        "## The highest rate of the grid each tool held",
        "",
        "Up to which every rate of the grid was on time (loadbench) or kept (wrk2, oha) in every "
        f"repeat. By the sends: every due request sent and answered with a send lateness p99 under "
        f"{ON_TIME_US:g} us - a send that waits for a free connection of the fixed pool (a server "
        "that cannot answer the rate holds them all) is late; by the loop: every due request "
        f"sent, and released by the generator's loop within {ON_TIME_US:g} us (p99) - its own "
        "part of the lateness.",
        "",
        table(["server", "tool", "ceiling req/s (sends)", "ceiling req/s (loop)"], ceilings),
        "",
        "## Every rate",
        "",
        "Medians of the repeats (min-max). req/s: the tool's own count over its window; lateness: "
        "due time -> the request's bytes handed to the socket (loadbench only), its loop's share "
        "beside it (due time -> released by the loop; the rest is the wait for a free connection "
        "of the fixed pool, and the write); latency: the "
        "tool's own, from the intended send time; CPU/resp: loadbench's threads' CPU in its window, "
        "the other tools' process CPU (rusage, start-up included) per response - a busy-polling "
        "thread's is its whole core; work/resp: a busy-polling thread's passes that found work, per "
        "response; busy: the share of its core spent working (busy-poll) or on CPU at all (the "
        "others); on time: per repeat.",
        "",
        table(
            [
                "server",
                "rate",
                "tool",
                "req/s",
                "lateness p99 us",
                "lateness p99.9 us",
                "loop p99 us",
                "latency p50 us",
                "latency p99 us",
                "CPU us/resp",
                "work us/resp",
                "busy",
                "on time / kept",
            ],
            body,
        ),  # fmt: skip
        "",
    ]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", default="beast,nginx", help="registry peers")
    p.add_argument("--rates", default="10000,50000,100000,150000")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--duration", type=int, default=5, help="seconds per run")
    p.add_argument("--connections", type=int, default=100)
    p.add_argument("--tools", help="only these tools, comma-separated (e.g. 'loadbench busy-poll')")
    p.add_argument("--out", default=str(REPO / "reports" / "open-loop-side-by-side"))
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--report-only", action="store_true")
    add_gate_args(p)
    args = p.parse_args(argv)
    rates = sorted(float(r) for r in args.rates.split(",") if r.strip())
    if args.smoke:
        args.repeats, args.duration, args.servers = 1, 1, "beast"
        rates = rates[:2]
        args.out = str(Path(tempfile.mkdtemp()) / "open-loop-side-by-side")
    out = Path(args.out)
    raw = out.with_suffix(".jsonl")
    command = command_of("bench/open_loop_side_by_side.py", argv)
    if not args.report_only:
        gate = make_gate(args)
        first = wait_quiet(gate)
        env = environment()
        env["Load average at start"] += f" - {machine_note(first['load1_at_start'], first)}"
        jsonl = JsonlWriter(raw)
        jsonl.write({"record": "environment", "environment": env, "command": command})
        available = []
        for tool in tools(args.tools):
            if tool.available:
                env[f"Tool {tool.name}"] = tool.version()
                available.append(tool)
            else:
                jsonl.write({"record": "skipped", "tool": tool.name, "why": tool.missing_reason})
        choices = registry_choices([(s, "http") for s in args.servers.split(",")], PEERS)
        for repeat in range(1, args.repeats + 1):
            order = available[repeat - 1 :] + available[: repeat - 1]  # each tool first once
            for choice in choices:
                with launch_peer(choice, cpus=[SERVER_CPU], peers_dir=PEERS) as peer:
                    url = peer.url("/plaintext")
                    for rate in rates:
                        for tool in order:
                            waited = wait_quiet(gate)
                            try:
                                row = measure(tool, url, rate, args)
                            except Exception as exc:  # noqa: BLE001 - one tool's failure is a row
                                row = {"tool": tool.name, "rate": rate, "error": str(exc)[:300]}
                                print(
                                    f"{choice.label} {tool.name} {rate:g}: {exc}", file=sys.stderr
                                )
                                jsonl.write(
                                    {
                                        "record": "failed",
                                        "server": choice.label,
                                        "repeat": repeat,
                                        **row,
                                    }
                                )
                                continue
                            jsonl.write({"record": "run", "server": choice.label, "repeat": repeat,
                                         "load1_at_start": waited["load1_at_start"], **row})  # fmt: skip
                            print(choice.label, repeat, tool.name, f"{rate:g}", f"{row['rps']:.0f}",
                                  row.get("lateness_p99_us"), flush=True)  # fmt: skip
        jsonl.close()
    records, env, command = read_jsonl(raw)
    write_report(out.with_suffix(".md"), render(records, env, command, raw.name))
    print(out.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
