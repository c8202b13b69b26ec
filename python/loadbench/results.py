"""A sweep's results folder on disk, and the tidy table made from it.

    RESULTS_DIR/
      sweep.json         the sweep's settings (what was asked for)
      environment.json   the machine, versions and pinning (loadbench.environment())
      results.jsonl      one JSON object per cell, appended and fsynced the moment it ends
      report.md, *.png   written by `loadbench report` / at the end of `loadbench sweep`

A line of results.jsonl: ``id``, ``target``, ``protocol``, ``workload``, ``mode`` ("closed",
"connect"), ``connections``, ``repeat``, ``status`` ("ok", "fail", "skipped"), ``error``,
``started`` (UTC ISO time), ``wall_s``, ``server`` (pid, argv, workers, cpus) and ``result`` (the
Result dict of loadbench.run, absent when the cell never ran).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from . import analysis
from .errors import ConfigError

RESULTS_FILE = "results.jsonl"
SETTINGS_FILE = "sweep.json"
ENVIRONMENT_FILE = "environment.json"


def append_record(path: Path, record: dict) -> None:
    """Append one line and force it to disk: a crash right after loses nothing."""
    line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def repair_tail(path: Path) -> None:
    """Drop a half-written last line (a kill mid-write) so the next append starts clean."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())


def read_records(path: Path) -> list[dict]:
    """Every complete line of a results.jsonl (a torn last line is ignored)."""
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                break  # torn by a crash mid-write: that cell was not finished
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError:
                    raise ConfigError(f"{path}:{number} is not valid JSON") from None
    return records


def load_dir(results_dir: Path) -> tuple[dict, dict, list[dict]]:
    """(settings, environment, records) of a results folder; a clear error if it is not one."""
    results_dir = Path(results_dir)
    results = results_dir / RESULTS_FILE
    if not results.exists():
        raise ConfigError(f"{results_dir} holds no {RESULTS_FILE}: not a sweep results folder")
    settings = _read_json(results_dir / SETTINGS_FILE)
    environment = _read_json(results_dir / ENVIRONMENT_FILE)
    return settings, environment, read_records(results)


def _read_json(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise ConfigError(f"{path} is not valid JSON") from None


def _get(d: Optional[dict], *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def flatten(record: dict) -> dict:
    """One tidy row per cell and repeat (the shape pandas, the report and the notebook use)."""
    result = record.get("result") or {}
    latency = result.get("latency_us") or {}
    rps = result.get("rps")
    mean_us = latency.get("mean")
    duration = result.get("duration_s")
    responses = result.get("responses")
    server = result.get("server") or {}
    sampled = record.get("sampler") or {}
    inflight = None
    if rps is not None and mean_us is not None:
        inflight = analysis.littles_law_inflight(rps, mean_us)
    connections = record.get("connections")
    cpu_us = server.get("cpu_us_per_req")
    if cpu_us is None and server.get("cpu_s") is not None and responses:
        cpu_us = analysis.cpu_us_per_request(server["cpu_s"], responses)
    errors = result.get("errors") or {}
    return {
        "id": record.get("id"),
        "target": record.get("target"),
        "protocol": record.get("protocol"),
        "workload": record.get("workload"),
        "mode": record.get("mode"),
        "connections": connections,
        "repeat": record.get("repeat"),
        "status": record.get("status"),
        "error": record.get("error"),
        "rps": rps,
        "responses": responses,
        "duration_s": duration,
        "errors": sum(int(v) for v in errors.values()) if errors else 0,
        # requests of the window without an outcome when the drain ended (absent in old results)
        "unfinished": result.get("unfinished"),
        "p50_ms": _ms(latency.get("p50")),
        "p90_ms": _ms(latency.get("p90")),
        "p99_ms": _ms(latency.get("p99")),
        "p999_ms": _ms(latency.get("p99.9")),
        "max_ms": _ms(latency.get("max")),
        "mean_ms": _ms(mean_us),
        "inflight": inflight,
        "starved": (record.get("mode") == "closed" and inflight is not None and bool(connections)
                    and analysis.is_starved(inflight, connections)),
        "server_cpu_us_per_req": cpu_us,
        "rss_peak_mib": _mib(server.get("rss_peak_kib") or sampled.get("rss_peak_kib")),
        "steal_share": _get(server, "machine", "steal_share"),
        "idle_share": _get(server, "machine", "idle_share"),
        # share of the server's pinned CPUs it used in the window (1.0 = all of them busy)
        "server_cpu_share": (server["cpu_s"] / duration / len(_get(record, "server", "cpus") or [1])
                             if server.get("cpu_s") is not None and duration else None),
        "wall_s": record.get("wall_s"),
        "started": record.get("started"),
        "generator_cpu_us_per_req": _get(result, "generator", "cpu_us_per_req"),
        "generator_bound": analysis.is_generator_bound(result),
        "generator_utilisation": _get(result, "generator", "utilisation"),
        "conn_per_s": (analysis.connection_rate(result.get("connections_opened", 0), duration)
                       if duration else None),
        "connections_opened": result.get("connections_opened"),
        # open loop: latency_us is corrected (from the intended send time), this one is not
        "p99_uncorrected_ms": _ms(_get(result, "latency_uncorrected_us", "p99")),
        "target_rate": _get(result, "rate", "target"),
        "late_sends": _get(result, "rate", "late_sends"),
        "sends": _get(result, "rate", "sends"),
    }


def _mib(kib: Optional[float]) -> Optional[float]:
    return kib / 1024 if kib else None


def _ms(us: Optional[float]) -> Optional[float]:
    return None if us is None else us / 1000.0


def frame(records: list[dict]):
    """The tidy pandas DataFrame of a results list (one row per cell and repeat)."""
    import pandas as pd

    return pd.DataFrame([flatten(r) for r in records])


@dataclass
class Aggregate:
    """The repeats of one (target, protocol, workload, mode, connections) folded together."""

    target: str
    protocol: str
    workload: str
    mode: str
    connections: int
    status: str  # "ok" (at least one repeat measured), "fail" (none did), "skipped"
    repeats: int = 0
    failed: int = 0
    note: Optional[str] = None  # the error of a failed cell, the reason of a skipped one
    rps: Optional[analysis.Spread] = None
    p50_ms: Optional[analysis.Spread] = None
    p99_ms: Optional[analysis.Spread] = None
    p999_ms: Optional[analysis.Spread] = None
    max_ms: Optional[analysis.Spread] = None
    p99_uncorrected_ms: Optional[analysis.Spread] = None
    target_rate: Optional[analysis.Spread] = None
    late_sends: Optional[analysis.Spread] = None
    mean_ms: Optional[analysis.Spread] = None
    cpu_us: Optional[analysis.Spread] = None
    inflight: Optional[analysis.Spread] = None
    conn_per_s: Optional[analysis.Spread] = None
    rss_peak_mib: Optional[float] = None
    steal_share: Optional[float] = None
    starved: bool = False
    generator_bound: bool = False

    @property
    def key(self) -> tuple:
        return (self.target, self.protocol, self.workload, self.mode, self.connections)


def aggregate(rows: list[dict]) -> dict[tuple, Aggregate]:
    """Median-of-repeats per cell key from flattened rows (see :func:`flatten`).

    Failed repeats do not enter the medians; a cell is FAIL only when no repeat measured.
    Starved is judged on the median in-flight count; generator-bound when any repeat was.
    """
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        key = (row["target"], row["protocol"], row["workload"], row["mode"], row["connections"])
        groups.setdefault(key, []).append(row)
    out = {}
    for key, group in groups.items():
        ok = [r for r in group if r["status"] == "ok"]
        failed = [r for r in group if r["status"] == "fail"]
        skipped = [r for r in group if r["status"] == "skipped"]
        status = "ok" if ok else ("fail" if failed else "skipped")
        note = (failed or skipped or [{}])[0].get("error")
        agg = Aggregate(*key, status=status, repeats=len(group), failed=len(failed), note=note)
        if ok:
            pick = lambda name: analysis.median_spread([r[name] for r in ok])  # noqa: E731
            agg.rps, agg.p50_ms, agg.p99_ms = pick("rps"), pick("p50_ms"), pick("p99_ms")
            agg.mean_ms, agg.cpu_us, agg.inflight = pick("mean_ms"), pick("server_cpu_us_per_req"), pick("inflight")
            agg.conn_per_s = pick("conn_per_s")
            agg.p999_ms, agg.max_ms = pick("p999_ms"), pick("max_ms")
            if key[3] == "open":
                agg.p99_uncorrected_ms, agg.target_rate = pick("p99_uncorrected_ms"), pick("target_rate")
                agg.late_sends = pick("late_sends")
            rss = [r["rss_peak_mib"] for r in ok if r["rss_peak_mib"] is not None]
            agg.rss_peak_mib = max(rss) if rss else None
            steal = [r["steal_share"] for r in ok if r["steal_share"] is not None]
            agg.steal_share = max(steal) if steal else None
            agg.starved = (key[3] == "closed" and agg.inflight is not None
                           and analysis.is_starved(agg.inflight.median, key[4]))
            agg.generator_bound = any(r["generator_bound"] for r in ok)
        out[key] = agg
    return out


def common_closed_cells(aggs: dict[tuple, Aggregate], targets: list[str]) -> set[tuple]:
    """(protocol, workload, connections) of the closed-loop cells that every server with any
    measurement completed: averages over them do not favour a server for the cells it skipped
    (node without https, nginx without echo)."""
    common: Optional[set] = None
    for t in targets:
        mine = {(k[1], k[2], k[4]) for k, a in aggs.items() if k[0] == t and k[3] == "closed" and a.status == "ok"}
        if mine:
            common = mine if common is None else common & mine
    return common or set()
