"""Where does a sweep's variance live on this machine? Kalibera & Jones' multi-level view
(ISMM'13): a figure varies between the windows of one server process, between server processes
started the same minute, and between minutes. A repeat must replicate the level where most of it
lives, or its spread promises a re-run what the re-run will not keep (issue 57: two default
sweeps 30 minutes apart disagreed beyond their stated noise in 43 of 95 cells).

The design, one loadbench sweep (so it is measured exactly as a sweep measures):
- B blocks (the sweep's repeats, run in blocks: sweep/runner.py) spread over the minutes;
- in each block every server twice (SweepPlan.twins: "<name>" and "<name>-again"), each on a
  freshly started process - two processes a minute;
- in each process W windows: W copies of the plaintext workload, one after the other.

The variance components of a balanced nested design, per server and metric (req/s and server
CPU us/response): window sw2 = MS_window; process sp2 = (MS_process - MS_window) / W; minute
sb2 = (MS_block - MS_process) / (P W), negatives as 0. The report gives each as a coefficient
of variation and what it predicts for an interval of R replications: the old design (R windows
back to back on one process: its spread saw sw2 alone) against the sweep in blocks (R
processes in R blocks: sb2 + sp2 + sw2).

    python3 bench/variance_split.py                 # -> reports/variance-split.md and
                                                    #    reports/variance-split/ (the sweep)
    python3 bench/variance_split.py --report-only
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Optional

from loadbench import Sweep, Workload
from loadbench.core import replication
from loadbench.core.gate import LoadGate
from loadbench.report.document import write_report as write_sweep_report
from loadbench.report.markdown import table
from loadbench.sweep import results_folder as results
from loadbench.sweep.plan import TWIN_SUFFIX
from loadbench.sweep.registry import peer_registry

from .checkout import peers_dir, reports_dir
from .report_text import write_report

DEFAULT_SERVERS = ("beast", "nginx", "python-asyncio", "node", "go")
METRICS = (("rps", "req/s"), ("server_cpu_us_per_req", "CPU us/response"))


def workloads(windows: int) -> list[Workload]:
    """W copies of the plaintext workload: W windows of one process, one after the other."""
    return [
        Workload("plaintext" if i == 0 else f"plaintext-{i + 1}", "GET", "/plaintext")
        for i in range(windows)
    ]


def sweep_of(servers: list[str], blocks: int, windows: int, duration: float) -> Sweep:
    registry = {t.name: t for t in peer_registry(peers_dir())}
    targets = [registry[name] for name in servers]
    return Sweep(
        targets=targets,
        twins=list(servers),
        workloads=workloads(windows),
        concurrencies=[25],
        protocols=["http"],
        repeats=blocks,
        duration=duration,
        warmup=0.25,
        peers_dir=str(peers_dir()),
    )


def _cells(records: list[dict], metric: str) -> dict[str, dict[int, dict[str, list[float]]]]:
    """{server: {block: {process: [window values]}}}, a twin folded into its original."""
    out: dict[str, dict[int, dict[str, list[float]]]] = {}
    for r in records:
        if r.get("status") != "ok" or r.get("mode") != "closed" or r.get("contended"):
            continue
        result = r.get("result") or {}
        value = _metric(r, result, metric)
        if value is None:
            continue
        name = r["target"].removesuffix(TWIN_SUFFIX)
        by_block = out.setdefault(name, {}).setdefault(int(r["block"]), {})
        by_block.setdefault(r["target"], []).append(value)
    return out


def _metric(record: dict, result: dict, metric: str) -> Optional[float]:
    if metric == "rps":
        return result.get("rps")
    server = result.get("server") or {}
    cpu, responses = server.get("cpu_s"), result.get("responses")
    return 1e6 * cpu / responses if cpu is not None and responses else None


def components(cells: dict[int, dict[str, list[float]]]) -> Optional[dict]:
    """The nested ANOVA's variance components over the balanced part of ``cells``: the
    processes that kept all their windows (a contended window is left out, and its process
    with it), the blocks that kept at least two such processes."""
    w = max((len(v) for b in cells.values() for v in b.values()), default=0)
    data = [[v for v in b.values() if len(v) == w] for b in cells.values()]
    data = [b for b in data if len(b) >= 2]
    if w < 2 or len(data) < 2:
        return None
    p = min(len(b) for b in data)
    data = [b[:p] for b in data]
    n_b = len(data)
    grand = sum(x for b in data for v in b for x in v) / (n_b * p * w)
    proc_means = [[sum(v) / w for v in b] for b in data]
    block_means = [sum(m) / p for m in proc_means]
    within = sum(
        (x - proc_means[i][j]) ** 2 for i, b in enumerate(data) for j, v in enumerate(b) for x in v
    )
    between_p = sum((m - block_means[i]) ** 2 for i, b in enumerate(proc_means) for m in b)
    ms_w = within / (n_b * p * (w - 1))
    ms_p = w * between_p / (n_b * (p - 1))
    ms_b = p * w * sum((m - grand) ** 2 for m in block_means) / (n_b - 1)
    return {
        "mean": grand,
        "window": ms_w,
        "process": max(0.0, (ms_p - ms_w) / w),
        "minute": max(0.0, (ms_b - ms_p) / (p * w)),
        "blocks": n_b,
        "processes": p,
        "windows": w,
    }


def _cv(var: float, mean: float) -> str:
    return f"{100 * math.sqrt(var) / mean:.1f} %" if mean else "n/a"


def _half(var: float, mean: float, n: int) -> str:
    """The 95 % t half-width of a mean of n values of variance var, as a share of the mean."""
    return f"±{100 * replication.t_quantile(n - 1) * math.sqrt(var / n) / mean:.1f} %"


def _gate_text(gate: dict) -> str:
    if not gate or gate.get("skipped"):
        return "not waited for (--no-wait)"
    outside = gate.get("outside_share")
    return (
        f"{'quiet' if gate.get('quiet') else 'NOT quiet'} after {gate.get('waited_s', 0):.0f} s "
        f"(load {gate.get('load1', 0):.2f}"
        + (f", others {100 * outside:.1f} % of the CPU" if outside is not None else "")
        + ")"
    )


def render(folder: Path, command: str) -> str:
    records = results.read_records(folder / results.RESULTS_FILE)
    env = results.ResultsFolder(folder).environment()
    lines = [
        "# Where a sweep's variance lives on this machine",
        "",
        f"Generated by `{command}` from the sweep in [{folder.name}/]({folder.name}/) (raw "
        "results.jsonl, sweep.json, environment.json beside its own report). Do not edit by hand.",
        "",
        "One loadbench sweep, measured as a sweep measures: B blocks spread over the minutes; in "
        "each block every server twice (twins: `NAME` and `NAME-again`), each on a freshly "
        "started process; in each process W windows, one after the other (W copies of the "
        "plaintext workload). Per server: the variance between windows of a process, between "
        "processes of a block and between blocks (a nested ANOVA; a contended window drops its "
        "process), as coefficients of variation, and the 95 % t interval each design states for "
        "a median of three: three windows of one process (the old sweep: its spread saw the "
        "windows only) against three fresh processes in three blocks (the sweep now: its spread "
        "sees all three levels).",
        "",
        f"Machine: {env.get('host', '?')}; 1-min load at start "
        f"{(env.get('loadavg_at_start') or ['?'])[0]}; commit {env.get('git_commit', '?')}; "
        f"gate before the sweep: {_gate_text(env.get('gate') or {})}.",
        "",
    ]
    for metric, name in METRICS:
        rows = []
        for server, cells in _cells(records, metric).items():
            c = components(cells)
            if c is None:
                continue
            total = c["minute"] + c["process"] + c["window"]
            rows.append(
                [
                    server,
                    f"{c['mean']:,.1f}".replace(",", " "),
                    _cv(c["window"], c["mean"]),
                    _cv(c["process"], c["mean"]),
                    _cv(c["minute"], c["mean"]),
                    f"{100 * (c['process'] + c['minute']) / total:.0f} %" if total else "n/a",
                    _half(c["window"], c["mean"], 3),
                    _half(total, c["mean"], 3),
                    f"{c['blocks']} x {c['processes']} x {c['windows']}",
                ]
            )
        lines += [
            f"## {name}",
            "",
            table(
                [
                    "Server",
                    f"Mean {name}",
                    "CV between windows",
                    "CV between processes",
                    "CV between minutes",
                    "Share above the window",
                    "Interval of 3 windows on one process (what the old report stated)",
                    "Interval of 3 fresh processes in 3 blocks (what a re-run varies by)",
                    "Blocks x processes x windows",
                ],
                rows,
            ),
            "",
        ]
    return "\n".join(lines) + "\n"


def main(repo: Optional[Path] = None, argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--servers", default=",".join(DEFAULT_SERVERS), help="peer names, comma-separated"
    )
    parser.add_argument("--blocks", type=int, default=4, help="blocks (minutes), default 4")
    parser.add_argument("--windows", type=int, default=3, help="windows per process, default 3")
    parser.add_argument("--duration", type=float, default=1.0, help="seconds per window")
    parser.add_argument(
        "--out", default=None, help="report path (default reports/variance-split.md)"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="re-render from the sweep folder"
    )
    parser.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    args = parser.parse_args(argv)
    report = Path(args.out) if args.out else reports_dir(repo) / "variance-split.md"
    folder = report.with_suffix("")
    command = "python3 bench/variance_split.py" + ("" if argv is None else " " + " ".join(argv))
    if not args.report_only:
        sweep = sweep_of(args.servers.split(","), args.blocks, args.windows, args.duration)
        gate = LoadGate(enabled=not args.no_wait, on_wait=lambda text: print(f"  {text}"))
        sweep.run(folder, gate=gate)
        write_sweep_report(folder)
    write_report(report, render(folder, command))
    print(report)
    return 0
