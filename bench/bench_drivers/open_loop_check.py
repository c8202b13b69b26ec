"""Open-loop latency and capacities checked against an open-loop generator no one here wrote.

loadbench's open loop is trusted only once an independent open-loop, coordinated-omission
corrected generator agrees with it at the same rate and connections: wrk2 (giltene/wrk2, built
from source - it is in no registry; give its path with --wrk2 or WRK2=, and without it the wrk2
columns are n/a). Each cell is (registry peer, rate, connections); every run gets a freshly
started server pinned to CPU 0 and the generator pinned to CPU 1, loadbench and wrk2 in
alternating order per repeat. The table puts each tool's corrected p50 / p99 / max beside the
other's, with loadbench's own verdict of who limited the run (core/limits.py).

    python3 bench/open_loop_vs_wrk2.py --wrk2 /path/to/wrk2/wrk
    python3 bench/open_loop_vs_wrk2.py --cells python-asyncio:34000:50 -r 5
    python3 bench/open_loop_vs_wrk2.py --capacities reports/SWEEP   # wrk2 at each capacity

With --capacities DIR (a sweep's results folder) the cells are each server's median capacity
(or lower bound) and its first failing rate under the sweep's objective, at the sweep's
connections: wrk2 should meet the objective at the first and - where the server failed it -
break it at the second.

wrk2 discards its first 10 s (its calibration, CALIBRATE_DELAY_MS in src/wrk.h, plus 5 ms per
connection) and reports the rest, so each wrk2 run lasts that much longer than --duration;
loadbench runs --warmup (1 s) then --duration. Their windows are equally long, their warm-ups
are each tool's own.

Each server is settled before the run (closed-loop rounds until its req/s stops climbing) unless
--fresh: a freshly started server is not yet the server it will be, and the two tools' first
seconds can leave it in different states. The python-asyncio peer is the example (2026-12-03,
strace -c of its worker): until a client first closes a connection, CPython frees its 256 KiB
receive buffers only after shrinking them, glibc never raises its mmap threshold, and every
request costs an mmap, an mremap and a munmap besides its recvfrom and sendto - 41 instead of
31 us of CPU. One connection closed by the client (the settling rounds close theirs) ends that
for the life of the process; wrk2's run ended it early, loadbench's fresh run did not, and at
24 000 req/s that is the difference between a saturated core and one at 75 %.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional

from loadbench import run as loadbench_run
from loadbench.core import analysis
from loadbench.core.errors import LoadbenchError
from loadbench.core.steady import settle
from loadbench.core.summary import format_us
from loadbench.slo.objectives import parse_objectives

from .checkout import peers_dir as default_peers_dir
from .child import run_child, taskset
from .environment_block import environment, machine_note
from .gate import add_gate_args, gate_before_text, make_gate, wait_quiet
from .generators import parse_wrk2
from .jsonl import JsonlWriter, read_jsonl
from .peers import PeerChoice, launch_peer, unavailable
from .report_text import add_report_args, report_head, report_paths, rewrite_report, write_report

SERVER_CPUS, GENERATOR_CPUS = [0], [1]
# wrk2's calibration period (src/wrk.h CALIBRATE_DELAY_MS, and 5 ms per connection's staggered
# start in src/wrk.c), which it leaves out of every figure
WRK2_CALIBRATION_S = 10.0
WRK2_STAGGER_S = 0.005
# wrk2's sends leave on its event loop's millisecond timer: an offset of its p50 above
# loadbench's up to this much is that timer, more is something else
WRK2_TIMER_US = 2_000.0
# a capacity's latency objective, by its metric: the figure of each tool's run it is judged on
OBJECTIVE_KEYS = {"p50": "p50_us", "p99": "p99_us", "max": "max_us"}
# wrk2 answered less than this share of the asked rate over its window: it did not send that rate
# (its one thread's own limit), so whether it met an objective there says nothing of the server
WRK2_SENT = 0.95
DEFAULT_CELLS = (
    # issue 42's case: 50 connections near their Little's-law edge against a fresh asyncio
    # server, at ~70, ~85 and ~100 % of its CPU ceiling on this 2-core VM (29 us per response)
    "python-asyncio:24000:50",
    "python-asyncio:29000:50",
    "python-asyncio:34000:50",
    "beast:60000:50",
    "nginx:50000:50",
    "h2o:34000:25",
)


def _parse_cell(text: str) -> tuple[str, float, int]:
    peer, rate, connections = text.split(":")
    return peer, float(rate), int(connections)


def _loadbench_run(url: str, rate: float, connections: int, args, pid: int) -> dict:
    r = loadbench_run(
        url, rate=rate, connections=connections, duration=args.duration, warmup=args.warmup,
        cpus=GENERATOR_CPUS, sample_pid=pid,
    )  # fmt: skip
    unc = r.latency_uncorrected
    return {
        "p50_us": r.latency.percentile(50),
        "p99_us": r.latency.percentile(99),
        "max_us": float(r.latency.max),
        "service_p99_us": unc.percentile(99) if unc is not None and unc.count else None,
        "lateness_p99_us": r.lateness.percentile(99) if r.lateness is not None else None,
        "loop_lateness_p99_us": (
            r.loop_lateness.percentile(99) if r.loop_lateness is not None else None
        ),
        "responses": r.responses,
        "due": r.due,
        "errors": r.error_count,
        "unfinished": r.unfinished,
        "pool": dict(r.pool),
        "limit": r.limit,
        "generator_cpu_us_per_req": r.cpu_us_per_req,
        "server": {
            k: (r.extras.get("server") or {}).get(k)
            for k in ("cpu_us_per_req", "cpu_s", "window_s", "cores", "others_cpu_s")
        },
    }


def _cli_run(cli: str, url: str, rate: float, connections: int, args, pid: int) -> dict:
    """Another loadbench build's `run` (--before: e.g. the commit before a change), through its
    CLI and its Result JSON."""
    out = Path(args.scratch) / "before.json"
    argv = [
        cli, "run", url, "-R", str(rate), "-c", str(connections), "-d", f"{args.duration}s",
        "--warmup", f"{args.warmup}s", "--cpus", ",".join(map(str, GENERATOR_CPUS)),
        "--sample-pid", str(pid), "--json", str(out),
    ]  # fmt: skip
    child = run_child(argv, timeout_s=args.duration + args.warmup + 60)
    if child.returncode != 0 or not out.exists():
        raise LoadbenchError(f"{cli} run failed (exit {child.returncode}): {child.stderr[-300:]}")
    d = json.loads(out.read_text())
    out.unlink()
    lat, unc = d["latency_us"], d.get("latency_uncorrected_us") or {}
    rate_block = d.get("rate") or {}
    return {
        "p50_us": lat["p50"], "p99_us": lat["p99"], "max_us": float(lat["max"]),
        "service_p99_us": unc.get("p99"),
        "lateness_p99_us": (rate_block.get("lateness_us") or {}).get("p99"),
        "responses": d["responses"], "due": rate_block.get("due"),
        "limit": d.get("limit"), "command": shlex.join(argv),
    }  # fmt: skip


def _wrk2_run(wrk2: str, url: str, rate: float, connections: int, args, peer) -> dict:
    calibration = WRK2_CALIBRATION_S + WRK2_STAGGER_S * connections
    seconds = math.ceil(calibration + args.duration)
    argv = [
        *taskset(GENERATOR_CPUS), wrk2, "-t1", f"-c{connections}", f"-d{seconds}s",
        f"-R{int(rate)}", "--latency", url,
    ]  # fmt: skip
    before = peer.snapshot()
    child = run_child(argv, timeout_s=seconds + 30)
    after = peer.snapshot()
    parsed = parse_wrk2(child.stdout)
    if child.returncode != 0 or parsed.get("p99_us") is None:
        raise LoadbenchError(
            f"wrk2 failed (exit {child.returncode}): {(child.stderr or child.stdout)[-300:]}"
        )
    server_cpu = max(0.0, after.cpu_s - before.cpu_s)
    requests = parsed.get("requests") or 0
    return {
        **{k: parsed.get(k) for k in ("p50_us", "p99_us", "max_us", "requests", "span_s")},
        "command": shlex.join(argv),
        "generator_cpu_s": child.cpu_s,
        "server_cpu_us_per_req": server_cpu * 1e6 / requests if requests else None,
    }


def _latency_objective(texts: list) -> Optional[str]:
    """The first of a search's objectives both tools report a figure for (p50, p99 or max), as
    written ("p99<10ms"); None when it has none."""
    try:
        objectives = parse_objectives([str(t) for t in texts]) if texts else []
    except LoadbenchError:
        return None
    return next((o.text for o in objectives if o.metric in OBJECTIVE_KEYS), None)


def _cells_from_sweep(folder: Path) -> list[tuple[str, float, int, str, Optional[str]]]:
    """Each server's median capacity (or lower bound) and its lowest first failing rate, with
    the search's connections and latency objective, from a sweep's capacity records: (peer,
    rate, connections, what, objective)."""
    records, _, _ = read_jsonl(folder / "results.jsonl")
    by_target: dict[str, list[dict]] = {}
    for rec in records:
        if rec.get("mode") == "capacity" and rec.get("status") == "ok" and rec.get("result"):
            by_target.setdefault(rec["target"], []).append(rec)
    cells = []
    for target, recs in sorted(by_target.items()):
        found = [r["result"].get("capacity") or r["result"].get("lower_bound") for r in recs]
        median = analysis.median([f for f in found if f])
        failing = [
            r["result"].get("first_failing") for r in recs if r["result"].get("first_failing")
        ]
        connections = int(recs[0]["connections"])
        objective = _latency_objective(recs[0]["result"].get("objectives") or [])
        if median:
            cells.append((target, float(median), connections, "capacity (median)", objective))
        if failing:
            cells.append((target, float(min(failing)), connections, "first failing", objective))
    return cells


def main(argv: Optional[list[str]] = None, repo: Optional[Path] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--wrk2", default=os.environ.get("WRK2"), help="wrk2's wrk binary (or WRK2=)")
    p.add_argument("--cells", default=",".join(DEFAULT_CELLS), help="PEER:RATE:CONNECTIONS,...")
    p.add_argument("--capacities", default=None, metavar="DIR", help="a sweep's results folder")
    p.add_argument("-d", "--duration", type=float, default=5.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=1.0, help="loadbench's warm-up per run")
    p.add_argument("-r", "--repeats", type=int, default=3, help="runs per tool and cell")
    p.add_argument(
        "--fresh",
        action="store_true",
        help="load each freshly started server at once, without settling it first (see the "
        "module's note on a fresh CPython server)",
    )
    add_report_args(p, "open-loop-vs-wrk2.md")
    p.add_argument(
        "--before",
        default=None,
        metavar="CLI",
        help="another loadbench build's command (e.g. the commit before a change, installed in "
        "a venv): run beside the others as the tool 'before'",
    )
    add_gate_args(p)
    args = p.parse_args(argv)
    out, raw = report_paths(args.out, repo, "open-loop-vs-wrk2.md")
    if args.report_only:
        rewrite_report(out, raw, render)
        return 0
    peers = default_peers_dir(repo)
    wrk2 = args.wrk2 if args.wrk2 and shutil.which(args.wrk2) else None
    if args.capacities:
        cells = _cells_from_sweep(Path(args.capacities))
    else:
        cells = [(*_parse_cell(c), "fixed rate", None) for c in args.cells.split(",") if c]
    env = environment()
    env["wrk2"] = wrk2 or "n/a (give --wrk2 or WRK2=: giltene/wrk2 built from source)"
    if args.before:
        env["before"] = args.before
    args.scratch = tempfile.mkdtemp(prefix="loadbench-open-loop-check-")
    gate = make_gate(args)
    env["Load gate"] = gate_before_text(wait_quiet(gate))  # before any server starts
    tools_order = ["loadbench", "wrk2"] + (["before"] if args.before else [])
    command = shlex.join([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])
    writer = JsonlWriter(raw)
    writer.write({"record": "environment", "environment": env, "command": command})
    records = []
    for peer_name, rate, connections, what, objective in cells:
        choice = PeerChoice(peer_name, peer_name, "http")
        why = unavailable(choice, peers)
        if why:
            print(f"{peer_name}: n/a - {why}", file=sys.stderr)
            continue
        for repeat in range(args.repeats):
            # the order rotates with the repeat: no tool always meets the server first
            shift = repeat % len(tools_order)
            for tool in tools_order[shift:] + tools_order[:shift]:
                if tool == "wrk2" and wrk2 is None:
                    continue
                rec = {"peer": peer_name, "rate": rate, "connections": connections,
                       "what": what, "objective": objective, "repeat": repeat, "tool": tool,
                       "gate": wait_quiet(gate)}  # fmt: skip
                with launch_peer(choice, cpus=SERVER_CPUS, peers_dir=peers) as server:
                    url = server.url("/plaintext")
                    if not args.fresh:
                        rec["settling"] = settle(
                            url, connections=connections, cpus=GENERATOR_CPUS, round_s=0.25
                        ).to_dict()
                    try:
                        if tool == "loadbench":
                            rec.update(_loadbench_run(url, rate, connections, args, server.pid))
                        elif tool == "before":
                            rec.update(
                                _cli_run(args.before, url, rate, connections, args, server.pid)
                            )
                        else:
                            rec.update(_wrk2_run(wrk2, url, rate, connections, args, server))
                    except LoadbenchError as exc:
                        rec["error"] = str(exc)
                writer.write(rec)
                records.append(rec)
                print(_line(rec), file=sys.stderr, flush=True)
    writer.close()
    write_report(out, render(records, env, command, raw.name))
    print(f"wrote {out} and {raw}")
    return 0


def _outside_shares(records: list[dict]) -> list[float]:
    shares = [
        analysis.outside_share(rec["server"], os.cpu_count() or 1)
        for rec in records
        if rec.get("tool") != "wrk2" and isinstance(rec.get("server"), dict)
    ]
    return [x for x in shares if x is not None]


def _all_quiet(records: list[dict]) -> bool:
    shares = _outside_shares(records)
    return bool(shares) and max(shares) <= analysis.CONTENDED_SHARE


def _outside_note(records: list[dict]) -> str:
    """What other processes took of the machine in loadbench's own run windows (the same
    outside share a sweep marks contended above analysis.CONTENDED_SHARE): the evidence of a
    quiet machine that the 1-min load average, trailing the previous run, cannot give."""
    shares = _outside_shares(records)
    if not shares:
        return ""
    busy = sum(1 for x in shares if x > analysis.CONTENDED_SHARE)
    return (
        f"In loadbench's {len(shares)} run windows other processes used "
        f"{100 * analysis.median_spread(shares).median:.1f} % of the machine at the median "
        f"(at most {100 * max(shares):.1f} %; {busy} above the "
        f"{100 * analysis.CONTENDED_SHARE:g} % a sweep marks contended; hypervisor steal is in "
        "each run's own `limited by`)."
    )


def _ms(us: Optional[float]) -> str:
    return "-" if us is None else format_us(us)


def _line(rec: dict) -> str:
    if "error" in rec:
        return f"{rec['peer']} {rec['rate']:.0f}/s c={rec['connections']} {rec['tool']}: {rec['error']}"
    limit = (rec.get("limit") or {}).get("by", "")
    return (
        f"{rec['peer']} {rec['rate']:.0f}/s c={rec['connections']} {rec['tool']}: p50 "
        f"{_ms(rec.get('p50_us'))}, p99 {_ms(rec.get('p99_us'))}, max {_ms(rec.get('max_us'))} "
        f"{limit}"
    )


def _spread(values: list[Optional[float]]) -> str:
    s = analysis.median_spread([v for v in values if v is not None])
    if s is None:
        return "n/a"
    return f"{format_us(s.median)} ({format_us(s.min)}-{format_us(s.max)})"


def render(
    records: list[dict], env: dict, command: str, raw_name: str = "open-loop-vs-wrk2.jsonl"
) -> str:
    """The report: per cell, each tool's corrected latency (median and range over the repeats),
    loadbench's verdict of who limited its runs, and whether the two agree."""
    from loadbench.report.markdown import table

    settings = {
        "Command": f"`{command}`",
        "Pinning": "server on CPU 0 (a fresh start per run), generator on CPU 1",
        "Server state": (
            "fresh: loaded at once after its start"
            if "--fresh" in command
            else "settled: closed-loop rounds of 0.25 s until req/s stops climbing "
            "(core/steady.py), then the run"
        ),
        "wrk2": f"-t1, its 10 s calibration (+5 ms per connection) discarded: {env.get('wrk2')}",
        "Agreement": "the medians of the two p99s within 2x of each other, or within 1 ms",
    }
    if any(rec.get("objective") for rec in records):
        settings["Objective"] = (
            "the sweep's own latency objective, judged on each tool's median figure: an "
            "independent generator should meet it at a capacity and break it at the rate the "
            f"server failed; a wrk2 run that answered under {100 * WRK2_SENT:.0f} % of the asked "
            "rate did not send it (`behind`)"
        )
    lines = report_head("Open-loop latency against wrk2", command, env, settings, raw_name)
    load1 = float(env.get("Load average at start", "0").split()[0] or 0)
    gate = {"quiet": True} if env.get("Load gate", "").startswith("quiet") else None
    machine = machine_note(load1, gate)
    if gate is None and "Load gate" not in env and _all_quiet(records):
        # raw data from before this driver ran the gate: the runs' own windows are the evidence
        machine = (
            f"load {load1:.2f} at start (no load gate ran before these runs; the 1-min average "
            "trails earlier work)"
        )
    lines += [f"Machine: {machine}. {_outside_note(records)}".rstrip(), ""]
    cells: dict[tuple, dict[str, list[dict]]] = {}
    for rec in records:
        key = (rec["peer"], rec["rate"], rec["connections"], rec.get("what", ""))
        cells.setdefault(key, {}).setdefault(rec["tool"], []).append(rec)
    rows, judged, objective_checks = [], [], []
    has_before = any(rec["tool"] == "before" for rec in records)
    has_objective = any(rec.get("objective") for rec in records)
    for (peer, rate, connections, what), tools in cells.items():
        ours = [r for r in tools.get("loadbench", []) if "error" not in r]
        theirs = [r for r in tools.get("wrk2", []) if "error" not in r]
        before = [r for r in tools.get("before", []) if "error" not in r]
        limits = sorted({(r.get("limit") or {}).get("by", "?") for r in ours})
        agree = _agreement(ours, theirs)
        judged.append((agree, limits, ours, theirs))
        objective = next((r.get("objective") for r in ours + theirs if r.get("objective")), None)
        meets = [_meets(runs, objective, rate) for runs in (ours, theirs)]
        if objective:
            objective_checks.append((what, *meets))
        rows.append(
            [
                peer, f"{rate:,.0f}".replace(",", " "), str(connections), what,
                _spread([r.get("p50_us") for r in ours]), _spread([r.get("p99_us") for r in ours]),
                _spread([r.get("max_us") for r in ours]),
                _spread([r.get("service_p99_us") for r in ours]), ", ".join(limits) or "-",
                _spread([r.get("p50_us") for r in theirs]), _spread([r.get("p99_us") for r in theirs]),
                _spread([r.get("max_us") for r in theirs]), agree,
                *([objective or "-", *meets] if has_objective else []),
                *([_spread([r.get("p99_us") for r in before]),
                   ", ".join(sorted({(r.get("limit") or {}).get("by", "-") for r in before}))]
                  if has_before else []),
            ]
        )  # fmt: skip
    lines += [
        "## Corrected latency: median (min-max) over the repeats",
        "",
        table(
            [
                "Server",
                "Rate /s",
                "Conns",
                "Cell",
                "loadbench p50",
                "p99",
                "max",
                "service p99",
                "limited by",
                "wrk2 p50",
                "p99",
                "max",
                "agree",
                *(["objective", "loadbench meets it", "wrk2 meets it"] if has_objective else []),
                *(["before p99", "before: limited by"] if has_before else []),
            ],
            rows,
        ),  # fmt: skip
        "",
        "`limited by` is loadbench's own verdict of each run (docs/open-loop.md): `server` - the "
        "figure is the server's; `pool`, `generator`, `contended` - it is not, and says so."
        + (
            f" `before`: the same runs by another build ({env.get('before')}), which had no such "
            "verdict ('-') when it predates it."
            if has_before
            else ""
        ),
        "",
    ]
    if judged:
        lines += ["## Verdict", "", _verdict(judged), ""]
    if objective_checks:
        lines += [_objective_verdict(objective_checks), ""]
    errors = [r for r in records if "error" in r]
    if errors:
        lines += ["## Runs that failed", ""] + [f"- {_line(r)}" for r in errors] + [""]
    return "\n".join(lines)


# A tool whose own repeats' p99s spread over more than this factor does not reproduce itself in
# that cell: agreement or not there says more about the run-to-run noise than about either tool.
UNSTABLE_SPREAD = 2.0


def _unstable(runs: list[dict]) -> bool:
    p99s = [r["p99_us"] for r in runs if r.get("p99_us")]
    return len(p99s) > 1 and max(p99s) > UNSTABLE_SPREAD * min(p99s)


def _verdict(judged: list[tuple[str, list[str], list[dict], list[dict]]]) -> str:
    """What the table proves, in three counts: the cells that agree; of the cells where
    loadbench called every run the server's own (the claim this check exists to test), those
    wrk2 confirms; and the cells where either tool does not reproduce itself."""
    compared = [j for j in judged if j[0] != "n/a"]
    agree = sum(a == "yes" for a, *_ in compared)
    claimed = [j for j in compared if j[1] == ["server"]]
    confirmed = sum(a == "yes" for a, *_ in claimed)
    unstable = [j for j in compared if _unstable(j[2]) or _unstable(j[3])]
    unstable_agree = sum(a == "yes" for a, *_ in unstable)
    text = (
        f"{agree} of {len(compared)} cells agree. In {len(claimed)} loadbench called every run "
        f"the server's own (`limited by` = server): wrk2 confirms {confirmed} of them. In "
        f"{len(unstable)} cells one tool's own repeats spread over more than "
        f"{UNSTABLE_SPREAD:g}x in p99 ({unstable_agree} of them agree): there the run-to-run "
        "noise of this machine, not either tool, decides the comparison."
    )
    # Which way a disagreement goes matters: loadbench above wrk2 is the fault this check exists
    # for (a backlog passed off as latency); below it, wrk2's own sends may be the later ones -
    # "accurate to a +/- ~1 msec granularity, due to OS sleep time behavior" (its README), seen
    # in its p50 sitting that far above loadbench's on a server that answers in microseconds.
    lower = [j for j in compared if j[0] != "yes" and _p99(j[2]) < _p99(j[3])]
    if lower:
        # how far wrk2's own p50 sits above loadbench's: its timer when that is about a ms
        offsets = [
            _median(j[3], "p50_us") - _median(j[2], "p50_us")
            for j in lower
            if _median(j[3], "p50_us") is not None and _median(j[2], "p50_us") is not None
        ]
        offset = analysis.median(offsets)
        text += (
            f" In {len(lower)} of the {len(compared) - agree} that disagree loadbench reads lower "
            "than wrk2"
            + (f", and wrk2's own p50 sits {format_us(offset)} above loadbench's there (median)"
               if offset is not None else "")
            + (": wrk2 sends on a timer of about 1 ms (its README: latencies accurate to +/- "
               "~1 msec)" if offset is not None and offset <= WRK2_TIMER_US else "")
            + "."
        )  # fmt: skip
    return text


def _meets(runs: list[dict], objective: Optional[str], rate: float) -> str:
    """Whether one tool's runs of a cell met the sweep's latency objective (the median of their
    figures for it): "yes", "no", "behind (N /s)" for a wrk2 that did not send the rate, or
    "n/a"."""
    if not objective or not runs:
        return "n/a"
    o = parse_objectives([objective])[0]
    if runs[0].get("tool") == "wrk2":
        sent = analysis.median(
            [r["requests"] / r["span_s"] for r in runs if r.get("requests") and r.get("span_s")]
        )
        if sent is not None and sent < WRK2_SENT * rate:
            return f"behind ({sent:,.0f} /s)".replace(",", " ")
    value = _median(runs, OBJECTIVE_KEYS[o.metric])
    return "n/a" if value is None else ("yes" if value < o.limit else "no")


def _objective_verdict(checks: list[tuple[str, str, str]]) -> str:
    """The capacities' own check: an independent generator should meet the objective at each
    server's capacity and break it at the rate the server failed (where it sent that rate)."""
    parts = []
    for what, want, word in (("capacity", "yes", "meets"), ("first failing", "no", "breaks")):
        cells = [c for c in checks if c[0].startswith(what)]
        sent = [c for c in cells if not c[2].startswith(("behind", "n/a"))]
        if not cells:
            continue
        text = (
            f"at the {what} rate{'s' if what == 'first failing' else ' (median)'} wrk2 {word} "
            f"the objective in {sum(c[2] == want for c in sent)} of the {len(sent)} cells it "
            "sent on time"
        )
        if len(sent) < len(cells):
            text += f" ({len(cells) - len(sent)} more it could not send: its own limit)"
        text += f"; loadbench in {sum(c[1] == want for c in cells)} of {len(cells)}"
        parts.append(text)
    judged = [c for c in checks if c[1] in ("yes", "no") and c[2] in ("yes", "no")]
    same = sum(c[1] == c[2] for c in judged)
    return (
        "Capacities against their objective: "
        + "; ".join(parts)
        + f". The two tools give the same verdict in {same} of the {len(judged)} cells both ran."
    )


def _median(runs: list[dict], key: str) -> Optional[float]:
    return analysis.median([r.get(key) for r in runs])


def _p99(runs: list[dict]) -> float:
    value = _median(runs, "p99_us")
    return math.inf if value is None else value


def _agreement(ours: list[dict], theirs: list[dict]) -> str:
    a = analysis.median([r.get("p99_us") for r in ours])
    b = analysis.median([r.get("p99_us") for r in theirs])
    if a is None or b is None:
        return "n/a"
    close = abs(a - b) <= 1000 or max(a, b) <= 2 * min(a, b)
    return "yes" if close else f"NO ({a / b:.2g}x)"
