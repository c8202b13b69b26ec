"""Did it get faster, slower, or is that noise? Two results compared with statistics.

    df = loadbench.compare("reports/base", "reports/new")     # a pandas DataFrame

One row per cell (target, protocol, workload, mode, load) and metric (req/s, server CPU us/req,
p50, p99, p99.9; for a capacity cell, the capacity its searches found). Each metric is taken per repeat - the repeat is the unit, requests are never
pooled - and both sides are summarised by THE median (:func:`loadbench.analysis.median`).

- ``change_pct``: (median new - median base) / median base, in %.
- ``p_value``: exact two-sided Mann-Whitney U over the repeats (scipy, ``method="exact"``).
  ``verdict`` is ``~`` when p >= ``alpha`` (0.05), else ``better`` / ``worse``.
- ``ci_low_pct`` .. ``ci_high_pct``: the Hodges-Lehmann interval of the change on the ratio
  scale (of log new - log base, so it reads as "new = base x (1 + change)" and a rate never
  falls below -100 %), from the exact distribution of U; ``ci_level`` is its exact coverage
  (>= 95 %; 97.1 % with 4 repeats per side, where no interval is tighter).
- ``too few repeats`` when a side has fewer than :data:`MIN_REPEATS` (4, benchstat's rule):
  with 3 per side the smallest exact two-sided p is 0.1, so no difference can be significant.
- Open-loop cells compare only when both sides achieved their target rate within 1 %
  (``not comparable`` otherwise): a server that missed its rate was measured at another load.
- Cells the report model does not rank for a metric (non-2xx/errors, contended; generator-bound
  for latency percentiles but not req/s or CPU us/req) keep their numbers and carry that
  metric's ``flags`` (``flags_base`` / ``flags_new``: the model's reasons); ``FAIL in new`` when
  the new side's cell never measured.
- A generator-bound (§) cell's req/s is a lower bound on the server's (the report model's rule),
  and the verdict uses only what that makes certain (``bounds`` says which case applied): a new
  figure significantly *below* a base lower bound is a certain regression (``worse``) - the base
  server was at least that fast; a new lower bound significantly *above* the base figure a
  certain improvement (``better``); a new lower bound not significantly different from the base
  is at least as good (``~``). Whatever else a bound leaves open - the new side above a base
  lower bound, below a new lower bound, or two lower bounds - is ``uncertain``, never a pass.

Inputs: a results folder (results.jsonl), a folder or glob of run JSON files (`loadbench run
--json`), a list of such files, a :class:`loadbench.model.Model`, or a list of records.
"""

from __future__ import annotations

import glob as _glob
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union
from urllib.parse import urlsplit

from ..core import analysis
from ..core.errors import ConfigError
from ..sweep.results_folder import read_records
from . import model as _model

MIN_REPEATS = 4  # per side, to detect a difference at 0.05 (exact U: 2/70 = 0.029 at 4 + 4)
CI_REPEATS = 6  # benchstat's count for a 95 % interval of one median; see ci_level
ALPHA = 0.05
CONFIDENCE = 0.95
RATE_TOLERANCE = 0.01  # open loop: achieved within 1 % of the target rate

Source = Union[str, Path, "_model.Model", Sequence[Any]]


@dataclass(frozen=True)
class Metric:
    name: str  # what --fail names: rps, cpu, p50, p99, p99.9
    column: str  # the model row's column
    label: str
    higher_is_better: bool


METRICS = [
    Metric("rps", "rps", "req/s", True),
    Metric("cpu", "server_cpu_us_per_req", "CPU us/req", False),
    Metric("p50", "p50_ms", "p50 (ms)", False),
    Metric("p99", "p99_ms", "p99 (ms)", False),
    Metric("p99.9", "p999_ms", "p99.9 (ms)", False),
    # heap allocations per response (results counted with allocations = true; else no rows)
    Metric("allocs", "allocs_per_req", "allocs/req", False),
    Metric("alloc_bytes", "alloc_bytes_per_req", "bytes allocated/req", False),
    # the kernel's side per response (the sampler; results from before it carry no rows)
    Metric("syscalls", "syscalls_per_req", "syscalls/req", False),
    Metric("ctx_switches", "ctx_switches_per_req", "ctx switches/req", False),
    # a capacity search's answer per repeat (capacity cells only, see _capacity_rows)
    Metric("capacity", "capacity", "capacity (req/s)", True),
]
ALIASES = {
    "req/s": "rps",
    "throughput": "rps",
    "cpu_us": "cpu",
    "cpu/req": "cpu",
    "p999": "p99.9",
    "allocs/req": "allocs",
    "bytes/req": "alloc_bytes",
    "syscalls/req": "syscalls",
    "ctx switches/req": "ctx_switches",
    "ctx_switches/req": "ctx_switches",
}


def metric(name: str) -> Metric:
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    for m in METRICS:
        if m.name == key:
            return m
    raise ConfigError(f"unknown metric {name!r}: use one of {', '.join(m.name for m in METRICS)}")


# -- statistics (pure functions over repeat values) ----------------------------------------
def u_cdf(m: int, n: int) -> list[float]:
    """P(U <= u) for u = 0 .. m*n under the null hypothesis, for samples of m and n without
    ties (the exact distribution: counts of arrangements by the recurrence
    N(m, n, u) = N(m - 1, n, u - n) + N(m, n - 1, u))."""
    # counts[j][u] for the current i (first-sample size), j = 0..n
    prev: list[list[int]] = [[1] for _ in range(n + 1)]  # i = 0: U = 0 only
    for i in range(1, m + 1):
        cur: list[list[int]] = [[1]]  # j = 0: U = 0 only
        for j in range(1, n + 1):
            size = i * j + 1
            row = [0] * size
            for u, c in enumerate(prev[j]):  # the largest value is from the first sample: U += j
                row[u + j] += c
            for u, c in enumerate(cur[j - 1]):
                row[u] += c
            cur.append(row)
        prev = cur
    return analysis.cumulative_shares(prev[n])


def mann_whitney_p(base: Sequence[float], new: Sequence[float]) -> float:
    """Exact two-sided Mann-Whitney U p-value (scipy.stats.mannwhitneyu, method="exact")."""
    from scipy.stats import mannwhitneyu

    if len(set(base) | set(new)) == 1:
        return 1.0  # every repeat identical: nothing changed
    return float(
        mannwhitneyu(list(base), list(new), alternative="two-sided", method="exact").pvalue
    )


def hodges_lehmann(
    base: Sequence[float], new: Sequence[float], confidence: float = CONFIDENCE
) -> Optional[tuple[float, float, float, float]]:
    """(shift, low, high, level): the Hodges-Lehmann estimate of new - base (median of all
    pairwise differences) and the distribution-free interval of the k-th smallest to k-th
    largest difference, k from the exact U distribution; ``level`` is its exact coverage.
    None when even the widest interval covers less than ``confidence``."""
    m, n = len(base), len(new)
    if not m or not n:
        return None
    diffs = sorted(b - a for a in base for b in new)
    cdf = u_cdf(m, n)
    tail = (1 - confidence) / 2
    k = 0
    while k < len(cdf) and cdf[k] <= tail + 1e-12:
        k += 1  # P(U <= k - 1) <= tail
    if k == 0:
        return None
    level = 1 - 2 * cdf[k - 1]
    return analysis.median(diffs), diffs[k - 1], diffs[len(diffs) - k], level


# -- loading either side ---------------------------------------------------------------------
def run_record(result: dict, repeat: int, name: str = "run") -> dict:
    """A results.jsonl-shaped record of one `loadbench run --json` file, so the model reads it:
    the cell is (URL path, protocol, mode, connections or target rate)."""
    url = urlsplit(result.get("url") or "")
    config = result.get("config") or {}
    rate = (result.get("rate") or {}).get("target")
    mode = "open" if rate else ("connect" if config.get("keepalive") is False else "closed")
    workload = (url.path or "/") + (f"?{url.query}" if url.query else "")
    rec = {
        "id": f"{name}|{url.scheme}|{workload}|{mode}|r{repeat}",
        "target": name,
        "protocol": url.scheme or "http",
        "workload": workload,
        "mode": mode,
        "connections": config.get("connections"),
        "repeat": repeat,
        "status": "ok",
        "error": None,
        "result": result,
    }
    if mode == "open":
        rec["load_pct"] = round(rate)  # the rate itself: runs at another rate are another cell
    return rec


def _records_of_files(paths: Sequence[Path]) -> list[dict]:
    records: list[dict] = []
    for path in paths:
        if path.suffix == ".jsonl":
            records += read_records(path)
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: not a readable JSON file ({exc})") from None
        if not isinstance(data, dict) or "result" not in data and "responses" not in data:
            raise ConfigError(f"{path}: neither a loadbench run result nor a results record")
        records.append(data if "result" in data else run_record(data, len(records)))
    return records


def load_side(source: Source) -> _model.Model:
    """The report model of one side of a comparison (see the module docstring for inputs)."""
    if isinstance(source, _model.Model):
        return source
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_dir():
            if (path / "results.jsonl").exists():
                return _model.load(path)
            files = sorted(path.glob("*.json"))
            if not files:
                raise ConfigError(f"{path} holds neither results.jsonl nor run JSON files")
            return _model.build({}, {}, _records_of_files(files), path)
        if path.is_file():
            return _model.build({}, {}, _records_of_files([path]), path.parent)
        matches = sorted(_glob.glob(str(source)))
        if not matches:
            raise ConfigError(f"{source}: no such results folder or file")
        return _model.build({}, {}, _records_of_files([Path(p) for p in matches]))
    items = list(source)
    if items and all(isinstance(i, dict) for i in items):
        records = [
            i if "result" in i or "status" in i else run_record(i, n) for n, i in enumerate(items)
        ]
        return _model.build({}, {}, records)
    return _model.build({}, {}, _records_of_files([Path(p) for p in items]))


# -- the comparison --------------------------------------------------------------------------
def _values(rows: list[dict], key: tuple, column: str) -> list[float]:
    out = []
    for r in rows:
        if (
            r["status"] != "ok"
            or (r["target"], r["protocol"], r["workload"], r["mode"], r["load"]) != key
        ):
            continue
        v = r.get(column)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            out.append(float(v))
    return out


def _rate_share(agg: Optional[_model.Aggregate]) -> Optional[float]:
    if agg is None or agg.rps is None or agg.target_rate is None or not agg.target_rate.median:
        return None
    return agg.rps.median / agg.target_rate.median


def _exclusions(agg: Optional[_model.Aggregate], column: str = "rps") -> str:
    """The model's reasons not to rank ``agg`` for the metric in ``column`` (a generator-bound
    cell is flagged for req/s and latency, not for CPU us/req)."""
    return ", ".join(agg.exclusions(column)) if agg is not None and agg.status == "ok" else ""


def bound_case(verdict: str, base_bound: bool, new_bound: bool) -> tuple[str, str]:
    """(verdict, what the bounds made of it) for a higher-is-better metric whose base and/or new
    figure is a lower bound (see the module docstring). The text starts with the side(s) that
    are bounds: "base ...", "new ..." or "both ..."."""
    if not base_bound and not new_bound:
        return verdict, ""
    if base_bound and new_bound:
        return (
            "uncertain" if verdict in ("better", "worse", "~") else verdict,
            "both lower bounds (generator-bound on both sides): the order is open",
        )
    if verdict not in ("better", "worse", "~"):
        return verdict, f"{'base' if base_bound else 'new'} is a lower bound (generator-bound)"
    if base_bound:
        if verdict == "worse":
            return verdict, "base is a lower bound: new is below even that - a certain regression"
        return (
            "uncertain",
            "base is a lower bound (generator-bound): the base server may have been faster than new",
        )
    if verdict == "better":
        return verdict, "new is a lower bound above the base figure: a certain improvement"
    if verdict == "~":
        return (
            verdict,
            "new is a lower bound (generator-bound) level with the base figure: at least as good",
        )
    return (
        "uncertain",
        "new is a lower bound (generator-bound) below the base: the new server may be as fast",
    )


def _row(
    key: tuple, m: Metric, a: list[float], b: list[float], alpha: float, confidence: float
) -> dict:
    med_a, med_b = analysis.median(a), analysis.median(b)
    change = (
        100.0 * (med_b - med_a) / med_a if med_a not in (None, 0) and med_b is not None else None
    )
    row = {
        "target": key[0],
        "protocol": key[1],
        "workload": key[2],
        "mode": key[3],
        "load": key[4],
        "metric": m.name,
        "label": m.label,
        "n_base": len(a),
        "n_new": len(b),
        "base": med_a,
        "new": med_b,
        "change_pct": change,
        "ci_low_pct": None,
        "ci_high_pct": None,
        "ci_level": None,
        "p_value": None,
        "verdict": None,
        "bounds": "",
        "flags": "",
        "note": "",
    }
    if len(a) < MIN_REPEATS or len(b) < MIN_REPEATS:
        row["verdict"] = "too few repeats"
        row["note"] = f"{len(a)} vs {len(b)} repeats; at least {MIN_REPEATS} per side are needed"
        return row
    p = mann_whitney_p(a, b)
    row["p_value"] = p
    if (
        min(a + b) > 0
    ):  # on the ratio scale: log(new) - log(base), so a rate never drops below -100 %
        interval = hodges_lehmann([math.log(x) for x in a], [math.log(x) for x in b], confidence)
        if interval is not None:
            _, lo, hi, level = interval
            row.update(
                ci_low_pct=100.0 * math.expm1(lo),
                ci_high_pct=100.0 * math.expm1(hi),
                ci_level=level,
            )
    elif med_a:
        interval = hodges_lehmann(a, b, confidence)
        if interval is not None:
            _, lo, hi, level = interval
            row.update(
                ci_low_pct=100.0 * lo / med_a, ci_high_pct=100.0 * hi / med_a, ci_level=level
            )
    if p >= alpha or change is None or change == 0:
        row["verdict"] = "~"
    else:
        row["verdict"] = "better" if (change > 0) == m.higher_is_better else "worse"
    return row


def _capacity_rows(ma, mb, alpha: float, confidence: float) -> list[dict]:
    """Capacity cells compared like any metric, one search per repeat. A generator-bound
    search's highest passing rate is a lower bound on the capacity, so its side is compared as
    one (bound_case); a search that found nothing gives no value."""
    m = metric("capacity")
    ca, cb = ma.capacities(), mb.capacities()
    out = []
    for key in list(ca) + [k for k in cb if k not in ca]:
        sides = [ca.get(key), cb.get(key)]
        values, bounded = [], []
        for cell in sides:
            found = [] if cell is None else cell.searches
            vals = [s.get("capacity") or s.get("lower_bound") for s in found]
            values.append([float(v) for v in vals if v is not None])
            bounded.append(any(s.get("outcome") == "generator-bound" for s in found))
        if not values[0] and not values[1]:
            continue
        cell = next(c for c in sides if c is not None)
        row = _row(
            (cell.target, cell.protocol, cell.workload, "capacity", cell.connections),
            m,
            values[0],
            values[1],
            alpha,
            confidence,
        )
        row["verdict_figures"] = row["verdict"]
        if any(bounded):
            row["verdict"], row["bounds"] = bound_case(row["verdict"], *bounded)
        if None in sides:
            row.update(verdict="missing", note=f"only in {'new' if sides[0] is None else 'base'}")
        row.update(flags_base="", flags_new="")
        out.append(row)
    return out


def compare(
    base: Source,
    new: Source,
    metrics: Optional[Sequence[str]] = None,
    alpha: float = ALPHA,
    confidence: float = CONFIDENCE,
):
    """The comparison DataFrame of two results (see the module docstring for every column)."""
    import pandas as pd

    ma, mb = load_side(base), load_side(new)
    chosen = [metric(x) for x in metrics] if metrics else METRICS
    keys = list(ma.aggs) + [k for k in mb.aggs if k not in ma.aggs]
    out = []
    for key in keys:
        agg_a, agg_b = ma.aggs.get(key), mb.aggs.get(key)
        for m in chosen:
            flags_a, flags_b = _exclusions(agg_a, m.column), _exclusions(agg_b, m.column)
            flags = "; ".join(
                f"{side}: {f}" for side, f in (("base", flags_a), ("new", flags_b)) if f
            )
            a, b = _values(ma.rows, key, m.column), _values(mb.rows, key, m.column)
            if not a and not b:
                continue
            row = _row(key, m, a, b, alpha, confidence)
            verdict_figures = row["verdict"]
            row.update(flags=flags, flags_base=flags_a, flags_new=flags_b)
            bounded = [
                agg is not None
                and agg.status == "ok"
                and agg.ranked_for(m.column)
                and agg.bound_for(m.column) == "lower"
                for agg in (agg_a, agg_b)
            ]
            if any(bounded):
                row["verdict"], row["bounds"] = bound_case(row["verdict"], *bounded)
            row["verdict_figures"] = (
                verdict_figures  # on the figures alone, as if no side were a bound
            )
            if agg_a is None or agg_b is None:
                row.update(verdict="missing", note=f"only in {'new' if agg_a is None else 'base'}")
            elif agg_b.status == "fail" and agg_a.status == "ok":
                row.update(
                    verdict="FAIL in new",
                    note=agg_b.note or "the new side never measured this cell",
                )
            elif key[3] == "open":
                shares = (_rate_share(agg_a), _rate_share(agg_b))
                if any(s is None or abs(s - 1) > RATE_TOLERANCE for s in shares):
                    text = ", ".join("?" if s is None else f"{100 * s:.1f} %" for s in shares)
                    row.update(
                        verdict="not comparable",
                        note=f"open loop: achieved rate vs target {text} (base, new); both must be within "
                        f"{100 * RATE_TOLERANCE:g} %",
                    )
            out.append(row)
    if any(m.name == "capacity" for m in chosen):
        out += _capacity_rows(ma, mb, alpha, confidence)
    columns = [
        "target",
        "protocol",
        "workload",
        "mode",
        "load",
        "metric",
        "label",
        "n_base",
        "n_new",
        "base",
        "new",
        "change_pct",
        "ci_low_pct",
        "ci_high_pct",
        "ci_level",
        "p_value",
        "verdict",
        "bounds",
        "verdict_figures",
        "flags",
        "flags_base",
        "flags_new",
        "note",
    ]
    return pd.DataFrame(out, columns=columns)
