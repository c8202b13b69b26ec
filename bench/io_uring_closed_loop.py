#!/usr/bin/env python3
"""Would io_uring make the generator cheaper? (issue 45: "io_uring, tried and measured") The
same keep-alive HTTP/1.1 closed loop written twice in bench/io_uring/http1_loop.cpp - on epoll
with read()/write(), and on io_uring with a multishot receive per connection into provided
buffers, a whole batch's sends in one submit, registered files and sends that post no
completion - beside wrk and loadbench's own engine, in one run against the same servers.

    python3 bench/io_uring_closed_loop.py            # -> reports/io-uring-closed-loop.{md,jsonl}
    python3 bench/io_uring_closed_loop.py --smoke    # 1 repeat of 0.5 s, into a temp dir

The two prototype loops share everything but the I/O calls, so the ratio of their CPU per
response is what io_uring saves on this kernel before any engine work; wrk and the engine say
where that sits against the tools people use. Each tool's CPU is its own: the prototype's and
wrk's from os.wait4()'s rusage (every thread, io_uring's workers included), the engine's from
its threads. Server pinned to CPU 0 (one worker), every generator to CPU 1 with one thread;
repeats outermost, the tools in a rotating order inside each repeat, each run after the load
gate and measured again when other processes took the machine. Needs g++ and liburing-dev
(.ci/install.sh test installs both); wrk is skipped, with the reason, when absent.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import loadbench
from bench_drivers.child import run_child, taskset
from bench_drivers.environment_block import machine_note
from bench_drivers.gate import add_gate_args, gate_note, kept, measure_gated, outside_share
from bench_drivers.generators import Wrk
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
SOURCE = REPO / "bench" / "io_uring" / "http1_loop.cpp"
# uring-wait8: each wait returns at 8 completions or after 100 us - fewer, larger batches
PROTOTYPE_MODES = ("epoll", "uring", "uring-wait8")
TOOLS = (*PROTOTYPE_MODES, "wrk", "loadbench")
# The ratios the report gives, each repeat's own: what io_uring saves a bare loop, what the
# engine costs above that bare loop, and both against wrk
RATIOS = (
    ("uring", "epoll"),
    ("uring-wait8", "epoll"),
    ("loadbench", "epoll"),
    ("loadbench", "wrk"),
    ("epoll", "wrk"),
)
WARMUP_S = 0.3


def build(folder: Path) -> Path:
    """The prototype, compiled for this run (nothing built is committed)."""
    binary = folder / "http1_loop"
    cxx = shutil.which("g++")
    if cxx is None:
        raise SystemExit("io_uring_closed_loop: g++ is not installed (apt-get install g++)")
    proc = subprocess.run(
        [cxx, "-O2", "-std=c++17", "-o", str(binary), str(SOURCE), "-luring"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(
            "io_uring_closed_loop: cannot build the prototype (liburing-dev installed?): "
            + proc.stderr[-600:]
        )
    return binary


def prototype_run(
    binary: Path, mode: str, url: str, c: int, seconds: float, cpu: int, *rate_and_batch: float
) -> dict:
    """One run of the prototype in MODE, pinned to `cpu`: its JSON line (an open loop when a
    rate, and optionally a send batch in us, are given)."""
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    argv = [str(binary), mode, host, port, "/plaintext", str(c), str(WARMUP_S), str(seconds)]
    child = run_child(
        taskset([cpu]) + argv + [str(x) for x in rate_and_batch], timeout_s=seconds + 30
    )
    if child.returncode != 0:
        raise RuntimeError(f"http1_loop {mode}: {child.stderr.strip()[-400:]}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def _tool_run(tool: str, url: str, c: int, seconds: float, cpu: int, binary: Path) -> dict:
    """One run of one tool: its responses, window and own CPU."""
    if tool in PROTOTYPE_MODES:
        out = prototype_run(binary, tool, url, c, seconds, cpu)
        # the window's CPU (the prototype reads its rusage at the window's edges)
        return {"responses": out["responses"], "seconds": out["seconds"], "cpu_s": out["cpu_s"],
                "waits": out["batches"]}  # fmt: skip
    if tool == "wrk":
        wrk = Wrk()
        whole = max(1, round(seconds))
        child, result = wrk.run(url, c, whole, True, [cpu])
        return {"responses": result.responses, "seconds": result.duration_s,
                "cpu_s": child.cpu_s, "waits": None}  # fmt: skip
    loadbench.run(url, connections=c, duration=WARMUP_S, cpus=[cpu])
    r = loadbench.run(url, connections=c, duration=seconds, cpus=[cpu])
    return {"responses": r.responses, "seconds": r.duration_s, "cpu_s": r.cpu_s,
            "waits": r.counters.get("wakeups")}  # fmt: skip


def sampled(peer, one_run: Callable[[], dict]) -> tuple[dict, dict]:
    """one_run()'s result, and the server's CPU window around it (per response)."""
    sampler = Sampler(peer.pid, syscalls=False)
    before = sampler.snapshot()
    run = one_run()
    after = sampler.snapshot()
    return run, loadbench.sampler.window(before, after, run["responses"])


def measure(peer, tool: str, c: int, args: argparse.Namespace, binary: Path) -> dict:
    url = peer.url("/plaintext")
    run, window = sampled(
        peer, lambda: _tool_run(tool, url, c, args.duration, args.generator_cpu, binary)
    )
    return {
        "outside_share": outside_share(window, run["cpu_s"]),
        "tool": tool,
        "connections": c,
        "responses": run["responses"],
        "rps": run["responses"] / run["seconds"] if run["seconds"] else 0.0,
        "cpu_us_per_response": 1e6 * run["cpu_s"] / run["responses"] if run["responses"] else None,
        "waits_per_response": run["waits"] / run["responses"]
        if run["waits"] and run["responses"]
        else None,
        "server_cpu_us_per_req": window["cpu_us_per_req"],
    }


def rotations(
    args: argparse.Namespace, tools: list[str]
) -> Iterator[tuple[int, list[str], object]]:
    """(repeat, the tools in this repeat's order, a running server) for every repeat and server
    in --servers: repeats outermost, each server started once per repeat, pinned, and the tools'
    order rotating by one each repeat so drift hits every tool alike."""
    peers_dir = REPO / "bench" / "peers"
    choices = registry_choices([(p, "http") for p in args.servers.split(",")], peers_dir)
    for repeat in range(1, args.repeats + 1):
        shift = (repeat - 1) % len(tools)
        for choice in choices:
            with launch_peer(choice, cpus=[args.server_cpu], peers_dir=peers_dir) as peer:
                yield repeat, tools[shift:] + tools[:shift], peer


def runs(args: argparse.Namespace, binary: Path) -> Iterator[Callable[[], dict]]:
    tools = [t for t in TOOLS if t != "wrk" or Wrk().available]
    for repeat, order, peer in rotations(args, tools):
        for c in (int(x) for x in args.connections.split(",")):
            for tool in order:
                yield lambda tool=tool, c=c, peer=peer, repeat=repeat: {
                    "record": "run", "repeat": repeat, "server": peer.name,
                    **measure(peer, tool, c, args, binary),
                }  # fmt: skip


def per_repeat_ratio(runs: list[dict], num: str, den: str) -> list[float]:
    """Each repeat's own ratio of two tools' CPU per response (their runs back to back)."""
    out = []
    for repeat in sorted({r["repeat"] for r in runs}):
        by_tool = {r["tool"]: r["cpu_us_per_response"] for r in runs if r["repeat"] == repeat}
        if by_tool.get(num) and by_tool.get(den):
            out.append(by_tool[num] / by_tool[den])
    return out


def render(records: list[dict], env: dict, command: str) -> str:
    every = [r for r in records if r.get("record") == "run"]
    runs = kept(every)
    rows, ratios = [], []
    for server, c in sorted({(r["server"], r["connections"]) for r in runs}):
        cell = [r for r in runs if (r["server"], r["connections"]) == (server, c)]
        for tool in TOOLS:
            group = [r for r in cell if r["tool"] == tool]
            if not group:
                rows.append([f"{server} c = {c}", tool, "n/a", "not measured", "", ""])
                continue
            rows.append(
                [
                    f"{server} c = {c}",
                    tool,
                    fmt_number(analysis.median([r["rps"] for r in group])),
                    median_range([r["cpu_us_per_response"] for r in group]),
                    median_range([r["waits_per_response"] for r in group], 3),
                    median_range([r["server_cpu_us_per_req"] for r in group]),
                ]
            )
        ratios.append(
            [f"{server} c = {c}"]
            + [median_range(per_repeat_ratio(cell, a, b), 3) + "x" for a, b in RATIOS]
        )
    repeats = len({r["repeat"] for r in runs})
    env = with_gate_notes(env, runs, every)
    lines = report_head(
        "io_uring against epoll for the closed loop",
        "`bench/io_uring_closed_loop.py`",
        env,
        {
            "Servers": ", ".join(sorted({r["server"] for r in runs}))
            + " (bench/peers registry), one worker each, pinned to CPU 0",
            "Load": "HTTP/1.1 keep-alive, GET /plaintext, one generator thread pinned to CPU 1",
            "Tools": "epoll / uring: bench/io_uring/http1_loop.cpp's two loops (the same "
            "parser and counting; uring: multishot recv into 1024 provided 4 KiB buffers, "
            "registered files and ring fd, sends without completions, SINGLE_ISSUER + "
            "DEFER_TASKRUN, one submit-and-wait per batch; uring-wait8: a wait returns at 8 "
            "completions or after 100 us); wrk -t1; loadbench's engine",
            "Repeats": f"{repeats}, the tools in a rotating order inside each; medians (min-max)",
            "Command": f"`{command}`",
        },
        "io-uring-closed-loop.jsonl",
    )
    lines += [
        "## CPU per response",
        "",
        table(
            [
                "cell",
                "tool",
                "req/s",
                "generator CPU us/resp",
                "waits/resp",
                "server CPU us/resp",
            ],
            rows,
        ),
        "",
        "Generator CPU: the tool's own (the prototype's window from its rusage at the window's "
        "edges, wrk's whole process, the engine's threads) over its exact responses. Waits: "
        "epoll_wait / io_uring_submit_and_wait calls (the engine: its loop's wake-ups) per "
        "response.",
        "",
        "## Ratios, each repeat's own",
        "",
        table(["cell"] + [f"{a} / {b}" for a, b in RATIOS], ratios),
        "",
        "Each ratio is the median (min-max) of every repeat's own ratio of two runs measured "
        "back to back. uring / epoll below 1 is what io_uring saves the I/O of a closed loop; "
        "loadbench / epoll is what the engine's own work (recording, parsing) costs above that "
        "bare loop.",
        "",
    ]
    return "\n".join(lines)


def with_gate_notes(env: dict, runs: list[dict], every: list[dict]) -> dict:
    """The environment block with the machine's load and the gate's verdict over the runs kept
    (`runs`) out of all measured (`every`)."""
    first = runs[0].get("gate") or {} if runs else {}
    return {
        **env,
        "Machine": machine_note(runs[0].get("load1_at_start", 0.0) if runs else 0.0, first),
        "Load gate": gate_note(runs[0], every) if runs else "n/a",
    }


def measure_and_report(
    args: argparse.Namespace,
    argv: list[str] | None,
    script: str,
    stem: str,
    runs: Callable[[argparse.Namespace, Path], Iterator[Callable[[], dict]]],
    render: Callable[[list, dict, str], str],
) -> None:
    """An io_uring driver's last steps: the prototype built for this run, `runs` measured behind
    the load gate into STEM.jsonl (unless --report-only; its command as `script` was given
    `argv`), STEM.md rendered from it."""
    raw = stem_of(args, REPO, stem).with_suffix(".jsonl")
    if not args.report_only:
        with tempfile.TemporaryDirectory(prefix="io-uring-") as tmp:
            binary = build(Path(tmp))
            measure_gated(args, raw, command_of(script, argv), runs(args, binary))
    report_from_raw(raw, render)


def parse_args(p: argparse.ArgumentParser, argv: list[str] | None, stem: str) -> argparse.Namespace:
    """An io_uring driver's arguments: its own, already in `p`, and the ones both share."""
    p.add_argument("--duration", type=float, default=5.0, help="seconds per run")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--servers", default="beast,nginx", help="bench/peers registry servers, comma-separated"
    )
    add_pinning_args(p)
    add_stem_args(p, stem, smoke="1 repeat of 0.5 s")
    add_gate_args(p)
    args = p.parse_args(argv)
    if args.smoke:
        args.duration, args.repeats = 0.5, 1
    return args


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--connections", default="10,50,200")
    args = parse_args(p, argv, "io-uring-closed-loop")
    measure_and_report(
        args, argv, "bench/io_uring_closed_loop.py", "io-uring-closed-loop", runs, render
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
