"""Hand-made sweep results (the Result JSON contract of issue 3/4) for report and chart tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from loadbench.sweep import results_folder as rs


def result_dict(
    rps: float,
    mean_us: float,
    p50_us: float,
    p99_us: float,
    cpu_s: Optional[float],
    *,
    duration: float = 2.0,
    opened: int = 10,
    saturated: bool = False,
    rss_kib: int = 4096,
    steal: float = 0.01,
    shed: float = 0.0,
    errors: int = 0,
) -> dict:
    """``shed``: that share of the responses are 503s; ``errors``: connect errors (lost slots)."""
    responses = int(round(rps * duration))
    shed_n = int(round(responses * shed))
    codes = {"200": responses - shed_n, "503": shed_n} if shed_n else {"200": responses}
    return {
        "url": "http://127.0.0.1:1/plaintext",
        "config": {},
        "duration_s": duration,
        "responses": responses,
        "rps": rps,
        "status_codes": codes,
        "errors": {"connect": errors, "read": 0} if errors else {},
        "latency_us": {
            "min": p50_us / 2,
            "mean": mean_us,
            "stdev": 1.0,
            "max": p99_us * 2,
            "p50": p50_us,
            "p90": (p50_us + p99_us) / 2,
            "p99": p99_us,
            "p99.9": p99_us * 1.5,
        },
        "bytes_read": responses * 100,
        "bytes_written": responses * 50,
        "connections_opened": opened,
        "generator": {"cpu_s": 0.1, "cpu_us_per_req": 5.0, "saturated": saturated},
        "timeline": [],
        "server": None
        if cpu_s is None
        else {
            "pid": 1,
            "cpu_s": cpu_s,
            "cpu_us_per_req": cpu_s * 1e6 / responses,
            "rss_peak_kib": rss_kib,
            "fds_start": 5,
            "fds_end": 5,
            "threads": 1,
            "ctx_switches": 10,
            "machine": {"steal_share": steal, "idle_share": 0.2},
        },
    }


def record(
    target, protocol, workload, mode, c, repeat, status="ok", result=None, error=None
) -> dict:
    load = f"c{c}" if mode == "closed" else f"connect{c}"
    rec = {
        "id": f"{target}|{protocol}|{workload}|{load}|r{repeat}",
        "target": target,
        "protocol": protocol,
        "workload": workload,
        "mode": mode,
        "connections": c,
        "repeat": repeat,
        "status": status,
        "error": error,
        "started": "2026-11-29T20:00:00+00:00",
        "wall_s": 2.5,
        "server": None,
    }
    if result is not None:
        rec["result"] = result
    return rec


SETTINGS = {
    "targets": [
        {"name": "beast", "kind": "beast", "description": "Beast"},
        {
            "name": "py",
            "kind": "command",
            "argv": ["python3", "server.py", "{port}"],
            "workers_env": "PYTHON_WORKERS",
            "description": "asyncio",
        },
        {"name": "node", "kind": "command", "argv": ["node", "hello.js", "{port}"]},
    ],
    "workloads": [
        {
            "name": "plaintext",
            "method": "GET",
            "path": "/plaintext",
            "headers": {},
            "body": None,
            "requests": None,
            "concurrencies": None,
        },
        {
            "name": "json",
            "method": "GET",
            "path": "/json",
            "headers": {},
            "body": None,
            "requests": None,
            "concurrencies": [10],
        },
    ],
    "concurrencies": [1, 10],
    "protocols": ["http", "https"],
    "connection_setup": True,
    "connection_setup_concurrency": 20,
    "connection_setup_workload": "plaintext",
    "repeats": 3,
    "duration": 2.0,
    "warmup": 0.5,
    "timeout": 5.0,
    "workers": 1,
    "server_cpus": [0],
    "generator_cpus": [1],
    "generator_threads": None,
    "peers_dir": "bench/peers",
}

# (target, protocol, workload, c) -> three repeats of (rps, mean_us, p50_us, p99_us, cpu_s)
CLOSED = {
    ("beast", "http", "plaintext", 1): [
        (10000, 100, 90, 200, 0.4),
        (12000, 83, 80, 150, 0.48),
        (11000, 91, 85, 170, 0.44),
    ],
    ("beast", "http", "plaintext", 10): [
        (50000, 200, 180, 400, 1.0),
        (52000, 192, 170, 390, 1.04),
        (51000, 196, 176, 396, 1.02),
    ],
    ("py", "http", "plaintext", 1): [
        (5000, 200, 190, 300, 0.5),
        (5200, 192, 185, 290, 0.52),
        (5100, 196, 188, 295, 0.51),
    ],
    # under-driven: in-flight = 20000 x 100 us = 2 < 0.9 x 10 with connect errors (UNDERDRIVEN below);
    # its p50 (0.05 ms) is the lowest, yet never bold.
    ("py", "http", "plaintext", 10): [
        (20000, 100, 50, 150, 0.8),
        (21000, 95, 48, 140, 0.84),
        (19000, 105, 52, 160, 0.76),
    ],
    ("beast", "https", "plaintext", 1): [(8000, 125, 120, 250, 0.4)] * 3,
    ("beast", "https", "plaintext", 10): [(40000, 250, 240, 500, 1.0)] * 3,
    ("py", "https", "plaintext", 1): [(4000, 250, 240, 400, 0.5)] * 3,
    ("beast", "http", "json", 10): [(45000, 222, 200, 450, 1.0)] * 3,
    # sheds 30 % as fast 503s (SHEDDING below): the highest json req/s, yet never bold nor ranked
    ("py", "http", "json", 10): [(60000, 166, 150, 300, 0.9)] * 3,
    ("beast", "https", "json", 10): [(35000, 285, 270, 520, 1.0)] * 3,
}


UNDERDRIVEN = {
    ("py", "http", "plaintext", 10): 100
}  # connect errors per repeat (0.25 % of outcomes)
SHEDDING = {("py", "http", "json", 10): 0.3}


def write_results_dir(directory: Path) -> Path:
    """A results folder with ok, starved, generator-bound, FAIL, partial and skipped cells."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / rs.SETTINGS_FILE).write_text(json.dumps(SETTINGS))
    (directory / rs.ENVIRONMENT_FILE).write_text(
        json.dumps(
            {
                "host": "testhost",
                "kernel": "Linux 6.1",
                "cpu": {"model": "Test CPU", "logical_cores": 2},
            }
        )
    )
    path = directory / rs.RESULTS_FILE
    for (t, p, w, c), repeats in CLOSED.items():
        for r, (rps, mean, p50, p99, cpu) in enumerate(repeats):
            rs.append_record(
                path,
                record(
                    t,
                    p,
                    w,
                    "closed",
                    c,
                    r,
                    result=result_dict(
                        rps,
                        mean,
                        p50,
                        p99,
                        cpu,
                        rss_kib=4096 * (2 if t == "py" else 1) + r,
                        saturated=(t, p, c) == ("beast", "https", 10),
                        shed=SHEDDING.get((t, p, w, c), 0.0),
                        errors=UNDERDRIVEN.get((t, p, w, c), 0),
                    ),
                ),
            )
    # py https c=10: the server died in every repeat -> FAIL
    for r in range(3):
        rs.append_record(
            path,
            record(
                "py",
                "https",
                "plaintext",
                "closed",
                10,
                r,
                status="fail",
                error="py exited (code 3): boom",
            ),
        )
    # py https json: one repeat failed, two measured -> partial (†)
    rs.append_record(
        path, record("py", "https", "json", "closed", 10, 0, status="fail", error="py exited")
    )
    for r in (1, 2):
        rs.append_record(
            path,
            record(
                "py",
                "https",
                "json",
                "closed",
                10,
                r,
                result=result_dict(12000 + 1000 * r, 800, 700, 1000, 0.9),
            ),
        )
    # connection setup: conn/s = connections_opened / duration_s
    for t, p, opened in [
        ("beast", "http", (30000, 32000, 31000)),
        ("beast", "https", (8000, 8200, 8100)),
        ("py", "http", (9000, 9400, 9200)),
        ("py", "https", (1000, 1100, 1050)),
    ]:
        for r, n in enumerate(opened):
            rs.append_record(
                path,
                record(
                    t,
                    p,
                    "plaintext",
                    "connect",
                    20,
                    r,
                    result=result_dict(n / 2.0, 500, 450, 900, 0.3, opened=n),
                ),
            )
    # node: not installed -> every cell skipped
    for p in ("http", "https"):
        for c in (1, 10):
            for r in range(3):
                rs.append_record(
                    path,
                    record(
                        "node",
                        p,
                        "plaintext",
                        "closed",
                        c,
                        r,
                        status="skipped",
                        error="node is not installed",
                    ),
                )
    return directory


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of the first markdown table after `heading` in a report, header row included."""
    rows, seen = [], False
    for line in text[text.index(heading) :].splitlines()[1:]:
        if line.startswith("|"):
            seen = True
            if not set(line.replace("|", "").strip()) <= {"-"}:
                rows.append([c.strip() for c in line.strip("|").split("|")])
        elif seen:
            break
    return rows


def limited_result(
    rps: float,
    server_busy: float,
    generator_busy: float,
    *,
    duration: float = 2.0,
    connections: int = 25,
) -> dict:
    """A closed-loop Result whose both sides' CPU is known (the server on one core), for
    core/limits.py's rule: the server's CPU per response follows from its busy share
    (busy = rps x CPU per response on one core), so its CPU ceiling is rps / busy; the
    generator saturated at >= 90 % busy."""
    cpu_s = server_busy * duration
    mean_us = connections * 1e6 / rps
    out = result_dict(rps, mean_us, mean_us * 0.9, mean_us * 3, cpu_s, duration=duration)
    out["server"].update(window_s=duration, cores=1)
    out["generator"].update(utilisation=generator_busy, saturated=generator_busy >= 0.9)
    return out


def capacity_record(target: str, repeat: int, search: dict, protocol: str = "http") -> dict:
    """One capacity search of a sweep (mode "capacity"): ``search`` is its result (the
    CapacityResult dict: outcome, capacity, lower_bound, ceiling, first_failing, steps)."""
    rec = record(target, protocol, "plaintext", "capacity", 25, repeat, result=search)
    rec["id"] = f"{target}|{protocol}|plaintext|capacity25|r{repeat}"
    return rec


def search(
    outcome: str,
    passed: list[tuple[float, float]],
    failed: list[tuple[float, float]],
    ceiling: Optional[float] = None,
    step_ceiling: Optional[float] = None,
) -> dict:
    """A capacity search's result: steps at (rate, p99 ms) that passed and failed, in the order
    given (the run order); "capacity" finds the highest passing rate, a generator-bound one
    keeps it as its lower bound with ``ceiling`` (the new field) or only ``step_ceiling`` in the
    top passing step's limit block (what an older search has)."""
    steps = []
    for rate, p99 in passed + failed:
        ok = (rate, p99) in passed
        steps.append(
            {
                "rate": rate,
                "achieved_rate": rate,
                "passed": ok,
                "latency_ms": {"p50": p99 / 4, "p99": p99},
                "server_cpu_us_per_req": 10.0,
                "limit": {
                    "by": "generator" if outcome == "generator-bound" else "server",
                    "reason": "",
                    "ceiling_rps": step_ceiling,
                },
            }
        )
    top = max(r for r, _ in passed)
    found = outcome == "capacity"
    return {
        "objectives": ["p99<10ms"],
        "outcome": outcome,
        "capacity": top if found else None,
        "lower_bound": None if found else top,
        "ceiling": ceiling,
        "first_failing": min((r for r, _ in failed), default=None),
        "failing_objective": "p99<10ms" if failed else None,
        "steps": steps,
    }
