"""QUIC handshake cells: HTTP/3 handshakes per second against loadbench-server, one request per
connection (`--disable-keepalive`), as full handshakes, resumed ones (`--tls-resume`) and resumed
ones carrying their request as 0-RTT (`--h3-0rtt`), side by side in one run, pinned (server on
its CPUs, generator on its own), repeated, medians.

Counts come from both sides: the generator's JSON (handshakes, resumed, zero_rtt) and the
server's own exit line (h3 handshakes, resumed, zero_rtt), which must agree; the server's CPU per
handshake is its cgroup's CPU over its own handshake count. A fresh server per run: GnuTLS's
anti-replay window (10 s) starts with it, so a run shorter than that sees no 0-RTT rejections
from a window reset.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Optional

from loadbench.core import _core
from loadbench.core.server import ServerProcess
from loadbench.report.markdown import table

from .child import run_child, taskset
from .environment_block import environment
from .jsonl import JsonlWriter, read_jsonl
from .report_text import report_head, write_report

# mode -> the generator's extra flags (and whether the server accepts early data: always, so
# the 0-RTT cell measures accepted early data, not rejections)
MODES = {
    "full": [],
    "resumed": ["--tls-resume"],
    "0-rtt": ["--tls-resume", "--h3-0rtt"],
}


def measure(
    mode: str,
    connections: int,
    duration: float,
    server_cpus: list[int],
    generator_cpus: list[int],
    tmp: Path,
) -> dict:
    out = tmp / f"{mode}.json"
    with ServerProcess(tls=True, h3=True, h3_0rtt=True, http=False, cpus=server_cpus) as server:
        url = f"https://127.0.0.1:{server.https_port}/plaintext"
        argv = [
            *taskset(generator_cpus),
            sys.executable, "-m", "loadbench", "run", url, "--h3", "--disable-keepalive",
            "-c", str(connections), "-d", str(duration), "--warmup", "0.5",
            "--sample-pid", str(server.proc.pid), "--json", str(out), *MODES[mode],
        ]  # fmt: skip
        child = run_child(argv, timeout_s=duration + 60)
        stopped = server.stop()
    record: dict = {"mode": mode, "connections": connections, "duration_s": duration}
    if child.returncode != 0 or not out.exists():
        record["na"] = (child.stderr.strip().splitlines() or ["no output"])[-1]
        return record
    r = json.loads(out.read_text())
    handshakes = r["tls_handshakes"]
    zero_rtt = r["quic"]["zero_rtt"]
    server_block = r.get("server") or {}
    server_cpu = server_block.get("cpu_s")
    record.update(
        responses=r["responses"],
        errors=sum(r["errors"].values()),
        handshakes=handshakes,
        handshakes_per_s=r["tls_handshakes_per_s"],
        resumed=r["tls_resumed"],
        zero_rtt=zero_rtt if isinstance(zero_rtt, dict) else None,
        latency_us=r["latency_us"],
        generator_cpu_us_per_handshake=(
            r["generator"]["cpu_s"] * 1e6 / handshakes if handshakes else None
        ),
        server_cpu_us_per_handshake=(
            server_cpu * 1e6 / handshakes if handshakes and server_cpu is not None else None
        ),
        # how busy each side was in the window (1.0: one core saturated): which one bounds the cell
        generator_busy=r["generator"]["utilisation"],
        generator_saturated=r["generator"]["saturated"],
        server_busy=(
            server_cpu / server_block["window_s"]
            if server_cpu is not None and server_block.get("window_s")
            else None
        ),
        # the server's own counts over its whole life (warm-up and the generator's close
        # included), beside the generator's window counts
        server_h3=stopped.get("h3"),
    )
    return record


def _median(records: list[dict], key: str) -> Optional[float]:
    values = [r[key] for r in records if r.get(key) is not None]
    return statistics.median(values) if values else None


def _spread(records: list[dict], key: str) -> str:
    values = [r[key] for r in records if r.get(key) is not None]
    return f"{min(values):,.0f} - {max(values):,.0f}" if len(values) > 1 else "-"


def report(records: list[dict], env: dict, command: str, settings: dict) -> str:
    lines = report_head(
        "QUIC handshakes per second: full, resumed, 0-RTT",
        command,
        env,
        settings,
        "h3-handshakes.jsonl",
    )
    lines += [
        "## Handshakes per second (one request per connection)",
        "",
        "Each cell: a fresh loadbench-server --tls --h3 --h3-0rtt (pinned), `loadbench run --h3 "
        "--disable-keepalive` (pinned on its own CPU) with the mode's flags; medians over the "
        "repeats, the range beside. Handshakes, resumed and 0-RTT are the generator's counts in "
        "the window; the server's own counts (whole life) are in the JSONL and the last table. "
        "Busy: each side's CPU over the window, as a share of one core. § generator-bound (its "
        "core saturated in most runs): the rate is the generator's ceiling, a lower bound of "
        "the server's, and the server's CPU per handshake is the figure to compare.",
        "",
    ]
    rows = []
    for mode in MODES:
        runs = [r for r in records if r.get("mode") == mode and "na" not in r]
        if not runs:
            why = next((r["na"] for r in records if r.get("mode") == mode and "na" in r), "not run")
            rows.append([mode, "n/a", "", "", "", "", "", "", "", why])
            continue
        p50 = statistics.median(r["latency_us"]["p50"] for r in runs)
        p99 = statistics.median(r["latency_us"]["p99"] for r in runs)
        resumed = statistics.median(r["resumed"] / r["handshakes"] for r in runs if r["handshakes"])
        early = [
            r["zero_rtt"]["accepted"] / r["handshakes"]
            for r in runs
            if r["zero_rtt"] and r["handshakes"]
        ]
        # Never the generator's limit shown as the server's: a cell whose generator saturated
        # its core in most runs is marked, its rate a lower bound of the server's.
        bound = sum(bool(r["generator_saturated"]) for r in runs) * 2 > len(runs)
        server_busy = _median(runs, "server_busy")
        rows.append([
            mode,
            ("≥ " if bound else "") + f"{_median(runs, 'handshakes_per_s'):,.0f}" + (" §" if bound else ""),
            _spread(runs, "handshakes_per_s"),
            f"{resumed:.1%}",
            f"{statistics.median(early):.1%}" if early else "-",
            f"{p50 / 1000:.2f} / {p99 / 1000:.2f}",
            f"{_median(runs, 'generator_cpu_us_per_handshake'):.1f}",
            (f"{_median(runs, 'server_cpu_us_per_handshake'):.1f}"
             if _median(runs, "server_cpu_us_per_handshake") is not None else "n/a"),
            f"{_median(runs, 'generator_busy'):.0%} / "
            + (f"{server_busy:.0%}" if server_busy is not None else "n/a"),
            "",
        ])  # fmt: skip
    lines.append(
        table(
            [
                "Mode",
                "Handshakes/s",
                "Range (runs)",
                "Resumed",
                "0-RTT accepted",
                "Latency p50 / p99 (ms)",
                "Generator CPU us/handshake",
                "Server CPU us/handshake",
                "Busy: generator / server",
                "n/a because",
            ],
            rows,
        )
    )
    lines += [
        "",
        "## Both sides' counts (each run)",
        "",
        "The server counts every handshake of its life (the warm-up's too), the generator those "
        "of the measured window: the server's numbers are at least the generator's.",
        "",
    ]
    count_rows = []
    for r in records:
        if "na" in r or not r.get("server_h3"):
            continue
        s = r["server_h3"]
        z = r["zero_rtt"] or {}
        count_rows.append([
            r["mode"], r.get("repeat", 0), f"{r['responses']:,}", f"{r['handshakes']:,}",
            f"{r['resumed']:,}", f"{z.get('accepted', 0):,}", f"{s.get('handshakes', 0):,}",
            f"{s.get('resumed', 0):,}", f"{s.get('zero_rtt', 0):,}",
        ])  # fmt: skip
    lines.append(
        table(
            [
                "Mode",
                "Repeat",
                "Responses",
                "Handshakes",
                "Resumed",
                "0-RTT accepted",
                "Server handshakes",
                "Server resumed",
                "Server 0-RTT",
            ],
            count_rows,
        )
    )
    return "\n".join(lines) + "\n"


def settings_of(args: argparse.Namespace) -> dict:
    return {
        "Connections": args.connections,
        "Seconds per run": args.duration,
        "Repeats": args.repeats,
        "Server": "loadbench-server --tls --h3 --h3-0rtt (1 worker)",
        "Server CPUs": args.server_cpus,
        "Generator CPUs": args.generator_cpus,
    }


def main(repo: Path, argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "-c", "--connections", type=int, default=10, help="connection slots (default 10)"
    )
    p.add_argument("-d", "--duration", type=float, default=5.0, help="seconds per run (default 5)")
    p.add_argument("-r", "--repeats", type=int, default=3, help="runs per mode (default 3)")
    p.add_argument("--server-cpus", default="0", help="the server's CPUs (default 0)")
    p.add_argument("--generator-cpus", default="1", help="the generator's CPUs (default 1)")
    p.add_argument("--out", type=Path, default=repo / "reports", help="report folder")
    p.add_argument("--report-only", action="store_true", help="rewrite the report from the JSONL")
    args = p.parse_args(argv)
    jsonl = args.out / "h3-handshakes.jsonl"
    md = args.out / "h3-handshakes.md"
    if args.report_only:
        records, env, command = read_jsonl(jsonl)
        measured = p.parse_args(shlex.split(command)[2:])  # the measured run's settings
        write_report(md, report(records, env, command, settings_of(measured)))
        return 0
    if args.duration >= 10:
        p.error("-d must stay under 10 s: GnuTLS's anti-replay window would reject 0-RTT mid-run")
    if not _core.http3_available():
        p.error(f"this build has no HTTP/3: {_core.http3_missing_reason()}")
    command = "python3 bench/h3_handshakes.py " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    env = environment()
    writer = JsonlWriter(jsonl)
    writer.write({"record": "environment", "environment": env, "command": command})
    records: list[dict] = []
    server_cpus = [int(c) for c in args.server_cpus.split(",")]
    generator_cpus = [int(c) for c in args.generator_cpus.split(",")]
    modes = list(MODES)
    try:
        with tempfile.TemporaryDirectory(prefix="h3-handshakes-") as tmp:
            for repeat in range(args.repeats):
                # rotated each repeat, so a drift of the machine does not favour one mode
                for mode in modes[repeat % len(modes) :] + modes[: repeat % len(modes)]:
                    r = measure(
                        mode,
                        args.connections,
                        args.duration,
                        server_cpus,
                        generator_cpus,
                        Path(tmp),
                    )
                    r["repeat"] = repeat
                    writer.write(r)
                    records.append(r)
                    shown = r.get("na") or f"{r['handshakes_per_s']:,.0f} handshakes/s"
                    print(f"{mode:8} #{repeat} {shown}", flush=True)
    finally:
        writer.close()
    write_report(md, report(records, env, command, settings_of(args)))
    print(f"wrote {md} and {jsonl}")
    return 0
