#!/usr/bin/env python3
"""Soak: echo POST load on the Beast server for a long while; is anything leaking?

    python bench/soak.py                      # 2 minutes, writes reports/soak.md + soak.jsonl
    python bench/soak.py --duration 600 --connections 100 --body-bytes 4096

The native loadbench-server (one worker, pinned to CPU 0 when the machine has 2+ cores)
takes closed-loop POST /echo load from loadbench's own generator (pinned to CPU 1). A
loadbench.Sampler reads the server's RSS, fds and CPU once a second from /proc. Recorded:
requests and errors (the generator's exact counts, and the server's own echo counter), RSS
at start (idle, before load) / max / end, RSS after the first tenth of the run (the
steady-state reference), fds at baseline / max / after the load (once the generator's
connections are closed). The bar (seed report 002): zero errors, RSS flat, fds back to
their baseline. tests/test_soak.py runs a 15-second version and asserts it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

import loadbench
from loadbench.core.environment import environment

REPORTS_DIR = Path(__file__).resolve().parent.parent / "reports"
FDS_SETTLE_S = 5.0


@dataclass
class SoakResult:
    duration_s: float
    connections: int
    body_bytes: int
    workers: int
    responses: int
    errors: dict[str, int]
    rps: float
    latency_us: dict[str, float]
    server_echo_requests: int
    rss_kib_start: int
    rss_kib_steady: int  # after the first tenth of the run: connections and buffers are in place
    rss_kib_max: int
    rss_kib_end: int
    fds_baseline: int
    fds_max: int
    fds_after: int
    server_cpu_s: float
    server_cpu_us_per_req: Optional[float]
    samples: list[dict[str, Any]] = field(default_factory=list, repr=False)
    timeline: list[dict[str, Any]] = field(default_factory=list, repr=False)

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def rss_growth_kib(self) -> int:
        return self.rss_kib_end - self.rss_kib_start

    @property
    def steady_rss_growth_kib(self) -> int:
        return self.rss_kib_end - self.rss_kib_steady


def _pinning() -> tuple[Optional[list[int]], Optional[list[int]]]:
    cpus = sorted(os.sched_getaffinity(0))
    return ([cpus[0]], [cpus[1]]) if len(cpus) >= 2 else (None, None)


def soak(
    duration_s: float = 120.0,
    connections: int = 50,
    body_bytes: int = 1024,
    workers: int = 1,
    sample_interval_s: float = 1.0,
    pin: bool = True,
) -> SoakResult:
    server_cpus, generator_cpus = _pinning() if pin else (None, None)
    body = bytes(range(256)) * (body_bytes // 256) + bytes(body_bytes % 256)
    with loadbench.ServerProcess(workers=workers, cpus=server_cpus) as server:
        sampler = loadbench.Sampler(server.pid, interval=sample_interval_s, tree=False)
        idle = sampler.snapshot()
        with sampler:
            before = sampler.snapshot()
            result = loadbench.run(
                server.url("/echo"),
                connections=connections,
                duration=duration_s,
                method="POST",
                body=body,
                headers={"Content-Type": "application/octet-stream"},
                timeout=10.0,
                cpus=generator_cpus,
                interval=1.0,
            )
            after = sampler.snapshot()
            # The generator has closed its connections; the server must give every fd back.
            deadline = time.monotonic() + FDS_SETTLE_S
            settled = sampler.snapshot()
            while settled.fds != idle.fds and time.monotonic() < deadline:
                time.sleep(0.05)
                settled = sampler.snapshot()
            time.sleep(sample_interval_s)  # one more background sample after the load
        series = sampler.timeseries()
        stopped = server.stop()
    load = series[(series["t"] >= before.t) & (series["t"] <= after.t)]
    steady_t = before.t + duration_s / 10
    steady_rows = load[load["t"] >= steady_t]
    steady_rss = int(steady_rows.iloc[0]["rss_kib"]) if len(steady_rows) else int(after.rss_kib)
    cpu_s = after.cpu_s - before.cpu_s
    samples = [
        {
            "t_s": round(float(row["t"] - before.t), 3),
            "rss_kib": int(row["rss_kib"]),
            "fds": int(row["fds"]),
            "cpu_s": round(float(row["cpu_s"] - before.cpu_s), 3),
        }
        for _, row in series.iterrows()
    ]
    timeline = [
        {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
        for row in result.timeline.to_dict(orient="records")
    ]
    return SoakResult(
        duration_s=result.duration_s,
        connections=connections,
        body_bytes=body_bytes,
        workers=workers,
        responses=result.responses,
        errors={k: v for k, v in result.errors.items() if v},
        rps=result.rps,
        latency_us=result.latency_summary(),
        server_echo_requests=int(stopped.get("requests", {}).get("echo", 0)),
        rss_kib_start=int(idle.rss_kib),
        rss_kib_steady=steady_rss,
        rss_kib_max=max(int(load["rss_kib"].max()) if len(load) else 0, int(after.rss_kib)),
        rss_kib_end=int(after.rss_kib),
        fds_baseline=int(idle.fds),
        fds_max=max(int(load["fds"].max()) if len(load) else 0, int(after.fds)),
        fds_after=int(settled.fds),
        server_cpu_s=cpu_s,
        server_cpu_us_per_req=cpu_s * 1e6 / result.responses if result.responses else None,
        samples=samples,
        timeline=timeline,
    )


def to_markdown(r: SoakResult, env_md: str, command: str) -> str:
    mib = lambda kib: f"{kib / 1024:.1f} MiB"  # noqa: E731
    lat = r.latency_us
    rows = [
        ("Measured window", f"{r.duration_s:.1f} s"),
        ("Responses (generator, exact)", f"{r.responses:,}"),
        ("Requests served (server's echo counter)", f"{r.server_echo_requests:,}"),
        ("Errors", f"{r.error_count}" + (f" {r.errors}" if r.errors else "")),
        ("Throughput", f"{r.rps:,.0f} req/s"),
        (
            "Latency p50 / p99 / max",
            f"{lat['p50'] / 1000:.2f} / {lat['p99'] / 1000:.2f} / {lat['max'] / 1000:.2f} ms",
        ),
        (
            "Server CPU per request",
            f"{r.server_cpu_us_per_req:.2f} us" if r.server_cpu_us_per_req else "-",
        ),
        ("RSS at start (idle, before load)", mib(r.rss_kib_start)),
        ("RSS after the first tenth (steady reference)", mib(r.rss_kib_steady)),
        ("RSS max", mib(r.rss_kib_max)),
        ("RSS at the end of the load", mib(r.rss_kib_end)),
        (
            "RSS growth start -> end / steady -> end",
            f"{r.rss_growth_kib:+,} KiB / {r.steady_rss_growth_kib:+,} KiB",
        ),
        ("fds baseline / max / after", f"{r.fds_baseline} / {r.fds_max} / {r.fds_after}"),
    ]
    verdict = (
        "PASS: zero errors, fds back to baseline"
        if r.error_count == 0 and r.fds_after == r.fds_baseline
        else "FAIL"
    )
    step = max(1, len(r.samples) // 12)
    trace = [s for s in r.samples[::step]]
    lines = [
        "# Soak: echo POST on the Beast server",
        "",
        f"{r.connections} keep-alive connections POST {r.body_bytes}-byte bodies to `/echo` for "
        f"{r.duration_s:.0f} s (closed loop, loadbench's generator); the server (`loadbench-server`, "
        f"{r.workers} worker) is sampled from /proc once a second. Produced by `{command}`; raw data in "
        "`soak.jsonl` (summary, per-second server samples, generator timeline).",
        "",
        f"**{verdict}**",
        "",
        "| Figure | Value |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in rows],
        "",
        "## Server memory and fds over the run",
        "",
        "| t (s) | RSS (MiB) | fds | server CPU (s) |",
        "|---:|---:|---:|---:|",
        *[
            f"| {s['t_s']:.0f} | {s['rss_kib'] / 1024:.2f} | {s['fds']} | {s['cpu_s']:.2f} |"
            for s in trace
        ],
        "",
        "## Environment",
        "",
        env_md,
        "",
    ]
    return "\n".join(lines)


def write_jsonl(r: SoakResult, path: Path, env: dict[str, Any]) -> None:
    summary = {k: v for k, v in asdict(r).items() if k not in ("samples", "timeline")}
    summary.update(
        kind="summary",
        rss_growth_kib=r.rss_growth_kib,
        steady_rss_growth_kib=r.steady_rss_growth_kib,
        environment=env,
    )
    with open(path, "w") as f:
        f.write(json.dumps(summary) + "\n")
        for s in r.samples:
            f.write(json.dumps({"kind": "server_sample", **s}) + "\n")
        for row in r.timeline:
            f.write(json.dumps({"kind": "generator_interval", **row}) + "\n")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=120.0, help="seconds of load (default 120)")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--body-bytes", type=int, default=1024)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument(
        "--no-pin", action="store_true", help="do not pin server and generator to separate CPUs"
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=REPORTS_DIR / "soak.md",
        help="markdown report (jsonl beside it)",
    )
    args = ap.parse_args(argv)
    if args.duration <= 0 or args.connections < 1 or args.body_bytes < 0 or args.workers < 1:
        ap.error("duration must be > 0, connections and workers >= 1, body bytes >= 0")
    r = soak(args.duration, args.connections, args.body_bytes, args.workers, pin=not args.no_pin)
    env = environment(server_cpus=_pinning()[0] if not args.no_pin else None)
    command = "python bench/soak.py" + (" " + " ".join(sys.argv[1:]) if len(sys.argv) > 1 else "")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(to_markdown(r, env.to_markdown(), command))
    write_jsonl(r, args.out.with_suffix(".jsonl"), env.to_dict())
    print(
        f"soak: {r.responses:,} responses, {r.error_count} errors, RSS {r.rss_kib_start} -> max {r.rss_kib_max} -> "
        f"end {r.rss_kib_end} KiB, fds {r.fds_baseline} -> max {r.fds_max} -> after {r.fds_after}; wrote {args.out}"
    )
    return 0 if r.error_count == 0 and r.fds_after == r.fds_baseline else 1


if __name__ == "__main__":
    sys.exit(main())
