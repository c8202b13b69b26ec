"""The ONE report model of a sweep: rows, cells (median of repeats), peaks, averages over the
cells every server shares, RSS, flags, and what each figure proves. report.md (report.py), the
charts (charts.py, the HTML dashboard: dashboard.py), the notebook, `loadbench compare` and bench/ all draw from it,
so a number means the same thing wherever it appears.

    m = loadbench.model.load("reports/2026-11-29-host")
    m.peak("beast"), m.average("beast"), m.rss("beast"), m.excluded("py")
    m.peak_ranks()["beast"].text()      # '2', or 'at least 2nd (uncertain against h2o)'
    m.memory_per_connection()["beast"].rss_bytes_per_connection   # hold cells, apart from the load

The arithmetic itself (median, Little's law, CPU/req, outside CPU, the flags' rules, certain
ranks) lives in :mod:`loadbench.analysis`, each defined once; this module applies it to the
records.

A cell *enters* a metric's peaks, averages and rankings (``ranked_for``) when it measured
something (status ok), at most 1 % of its outcomes were non-2xx or errors, and no other process
took more than the contended share of the machine during its window. A generator-bound cell (§:
loadbench's own threads were the limit) enters them too, for what it proves (see
:data:`BOUNDED_METRICS`): its req/s and connection rate are lower bounds ("≥", the server did at
least that), its mean latency an upper bound ("≤", Little's law). Its latency percentiles prove
nothing, so it is excluded from those. Its CPU us per response and peak memory are the server's
own cost at the load it got (:data:`SERVER_COST_METRICS`). A peak, average or ratio built from a
bound is a bound itself (:class:`loadbench.analysis.Figure`), and rankings claim only the order
that is certain (:func:`loadbench.analysis.certain_ranks`): a lower bound above another server's
measured value ranks above it; otherwise the rank is a range that names the servers it is
uncertain against. Excluding a lower bound would turn a fast server into a slow one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..core import analysis
from ..core.analysis import Figure, Rank, Spread
from ..sweep.results_folder import ResultsFolder
from .capacity_cells import CapacityCell, is_capacity
from .capacity_cells import fold as fold_capacity
from .idle_memory import IdleMemory, is_hold
from .idle_memory import fold as fold_idle_memory

Key = tuple  # (target, protocol, workload, mode, load): load = C, or % of capacity (open)

# The protocols in report order, and how seed report 001 pairs them: HTTP/1.1 vs HTTP/2, once in
# cleartext (http vs h2c, prior knowledge) and once over TLS (https vs h2, ALPN). HTTP/3 (h3,
# QUIC) is compared with HTTP/2 over TLS, the protocol it replaces (issue 33).
PROTOCOL_ORDER = ("http", "https", "h2c", "h2", "h3")
HTTP1_PROTOCOLS = ("http", "https")
HTTP2_PROTOCOLS = ("h2c", "h2")
HTTP3_PROTOCOLS = ("h3",)
PROTOCOL_FAMILIES = (
    ("HTTP/1.1", HTTP1_PROTOCOLS),
    ("HTTP/2", HTTP2_PROTOCOLS),
    ("HTTP/3", HTTP3_PROTOCOLS),
)
PROTOCOL_PAIRS = (("cleartext", "http", "h2c"), ("TLS", "https", "h2"))
# The metrics a generator-bound (§) cell still ranks on, under every name the code uses for them
# (the Aggregate attribute, the tidy row's column, the comparison's short name): CPU per response
# divides the server's own CPU by the responses it served, and memory is the server's, so neither
# is the generator's limit - unlike req/s and latency, which are capped by it.
# Heap allocations per response are counts, not times: other processes taking the CPU do not
# change them, so a contended cell still ranks on them (an erroring one does not).
COUNT_METRICS = frozenset({"allocs_per_req", "alloc_bytes_per_req", "allocs", "alloc_bytes"})
SERVER_COST_METRICS = (
    frozenset({"cpu_us", "server_cpu_us_per_req", "cpu", "rss_peak_mib", "rss"}) | COUNT_METRICS
)
# What a generator-bound cell's figure proves for the metrics it bounds (the same names' rule):
# req/s and the connection rate are at least what was measured (the server would have done more
# for a faster generator); the mean latency of a closed loop is at most what was measured (C =
# req/s x mean latency, Little's law, with req/s only higher). Percentiles are bounded by nothing.
BOUNDED_METRICS = {"rps": "lower", "conn_per_s": "lower", "mean_ms": "upper"}
Protocols = Any  # one protocol name, a tuple/list/set of them, or None (every protocol)


def _matches(value: Any, want: Any) -> bool:
    if want is None:
        return True
    if isinstance(want, (tuple, list, set, frozenset)):
        return value in want
    return value == want


def _get(d: Optional[dict], *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _ms(us: Optional[float]) -> Optional[float]:
    return None if us is None else us / 1000.0


def _mib(kib: Optional[float]) -> Optional[float]:
    return kib / 1024 if kib else None


# Peak memory, most honest first: the window's sampled peak of the tree's summed RSS (the run's
# 0.1 s series), the sweep's background series around the cell, and last (results from before
# those existed) the sum of each process's lifetime VmHWM - an upper bound that adds peaks of
# different moments and counts shared pages once per process.
PEAK_MEMORY_SOURCES = (
    ("server", "rss_max_kib", "sampled peak of the tree's RSS in the window"),
    ("sampled", "rss_kib_max", "sampled peak of the tree's RSS around the cell"),
    ("server", "rss_peak_kib", "sum of lifetime VmHWM (upper bound)"),
    ("sampled", "rss_peak_kib", "sum of lifetime VmHWM (upper bound)"),
)


def peak_memory(server: dict, sampled: dict) -> tuple[Optional[float], Optional[str]]:
    """(peak RSS in KiB, what it is) from a record's `server` block and sampler totals."""
    blocks = {"server": server, "sampled": sampled}
    for block, key, what in PEAK_MEMORY_SOURCES:
        value = blocks[block].get(key) if isinstance(blocks[block], dict) else None
        if value:
            return float(value), what
    return None, None


def load_of(record: dict) -> tuple[Optional[int], Optional[int]]:
    """(connections, load_pct) of a record. Open-loop records written before ``load_pct``
    existed kept the percentage in ``connections``; they are read the new way."""
    if record.get("mode") == "open":
        pct = record.get("load_pct")
        if pct is None:
            pct = record.get("connections")
        return (record.get("connections") if "load_pct" in record else None), pct
    return record.get("connections"), None


def flatten(
    record: dict, cores: Optional[int] = None, contended_share: float = analysis.CONTENDED_SHARE
) -> dict:
    """One tidy row per cell and repeat (the shape pandas, the report and the notebook use).

    ``cores``: the machine's logical cores (for the outside-CPU share; environment.json)."""
    result = record.get("result") or {}
    latency = result.get("latency_us") or {}
    rps, mean_us = result.get("rps"), latency.get("mean")
    duration, responses = result.get("duration_s"), result.get("responses") or 0
    server = result.get("server") or {}
    sampled = record.get("sampler") or {}
    connections, load_pct = load_of(record)
    mode = record.get("mode")
    inflight = (
        analysis.littles_law_inflight(rps, mean_us)
        if rps is not None and mean_us is not None
        else None
    )
    allocations = server.get("allocations") or {}
    cpu_us = server.get("cpu_us_per_req")
    if cpu_us is None and server.get("cpu_s") is not None and responses:
        cpu_us = analysis.cpu_us_per_request(server["cpu_s"], responses)
    error_kinds = {
        k: int(v)
        for k, v in (result.get("errors") or {}).items()
        if isinstance(v, (int, float)) and v
    }
    if result.get("unfinished"):
        # requests of the window with no outcome when the drain ended: as bad as an error for
        # ranking (a frozen server must not look clean), named apart in the footnotes
        error_kinds["unfinished"] = int(result["unfinished"])
    errors = sum(error_kinds.values())
    codes = {str(k): int(v) for k, v in (result.get("status_codes") or {}).items()}
    non2xx = analysis.non_2xx(codes)
    generator_cpu_s = _get(result, "generator", "cpu_s")
    cores = record.get("machine_cores") or cores
    outside = analysis.outside_share(
        server, cores, generator_cpu_s, record.get("irq_share"), duration
    )
    if "contended" in record:
        contended = bool(record["contended"])
    else:  # a record from before the contended rule: judged on its window now
        contended = outside is not None and outside > contended_share
    reconnects = int(result.get("reconnects") or 0)
    # Connection setup: each side's CPU per new connection (http) / full handshake (https). A
    # cell where the generator's exceeds the server's measured the generator (§).
    opened = result.get("connections_opened") if mode == "connect" else None
    gen_us_per_conn = analysis.cpu_us_per_connection(generator_cpu_s, opened)
    server_us_per_conn = analysis.cpu_us_per_connection(server.get("cpu_s"), opened)
    setup_bound = analysis.is_setup_generator_bound(gen_us_per_conn, server_us_per_conn)
    cause = (
        analysis.underdriven_cause(inflight, connections, errors, reconnects)
        if mode == "closed" and record.get("status") == "ok"
        else None
    )
    return {
        "id": record.get("id"),
        "target": record.get("target"),
        "protocol": record.get("protocol"),
        "streams": record.get("streams") or 1,
        "workload": record.get("workload"),
        "mode": mode,
        "connections": connections,
        "load_pct": load_pct,
        "load": load_pct if mode == "open" else connections,
        "repeat": record.get("repeat"),
        "status": record.get("status"),
        "error": record.get("error"),
        "rps": rps,
        "responses": responses,
        "duration_s": duration,
        "errors": errors,
        "unfinished": int(result.get("unfinished") or 0),
        "error_kinds": error_kinds,
        "status_codes": codes,
        "non2xx": non2xx,
        "bad_share": analysis.bad_share(non2xx, errors, responses) if result else None,
        "p50_ms": _ms(latency.get("p50")),
        "p90_ms": _ms(latency.get("p90")),
        "p99_ms": _ms(latency.get("p99")),
        "p999_ms": _ms(latency.get("p99.9")),
        "max_ms": _ms(latency.get("max")),
        "mean_ms": _ms(mean_us),
        "inflight": inflight,
        "reconnects": reconnects,
        "starved": cause is not None,
        "starved_cause": cause,
        "server_cpu_us_per_req": cpu_us,
        # heap allocations (a sweep with allocations = true): per response, or why not
        "allocs_per_req": allocations.get("calls_per_req"),
        "alloc_bytes_per_req": allocations.get("bytes_per_req"),
        "allocs_na": allocations.get("na"),
        "executables": server.get("executables") or [],
        "server_version": (record.get("server") or {}).get("version"),
        "rss_peak_mib": _mib(peak_memory(server, sampled)[0]),
        "rss_source": peak_memory(server, sampled)[1],
        "pss_mib": _mib(server.get("pss_kib")),
        "steal_share": _get(server, "machine", "steal_share"),
        "idle_share": _get(server, "machine", "idle_share"),
        "outside_share": outside,
        "contended": contended,
        "outside_source": "processes" if server.get("others_cpu_s") is not None else "busy time",
        "reruns": int(record.get("reruns") or 0),
        # generator-bound at first, measured again with generator threads on spare CPUs: these
        "generator_widened_cpus": (record.get("generator_headroom") or {}).get("cpus"),
        "gate": record.get("gate"),
        # share of the server's pinned CPUs it used in the window (1.0 = all of them busy)
        "server_cpu_share": (
            server["cpu_s"] / duration / len(_get(record, "server", "cpus") or [1])
            if server.get("cpu_s") is not None and duration
            else None
        ),
        "wall_s": record.get("wall_s"),
        "started": record.get("started"),
        "generator_cpu_s": generator_cpu_s,
        "generator_cpu_us_per_req": _get(result, "generator", "cpu_us_per_req"),
        "generator_bound": analysis.is_generator_bound(result) or setup_bound,
        "setup_generator_bound": setup_bound,
        "generator_cpu_us_per_conn": gen_us_per_conn,
        "server_cpu_us_per_conn": server_us_per_conn,
        "generator_utilisation": _get(result, "generator", "utilisation"),
        "conn_per_s": (
            analysis.connection_rate(result.get("connections_opened", 0), duration)
            if duration
            else None
        ),
        "connections_opened": result.get("connections_opened"),
        # open loop: latency_us is corrected (from the intended send time), this one is not
        "p99_uncorrected_ms": _ms(_get(result, "latency_uncorrected_us", "p99")),
        "target_rate": _get(result, "rate", "target"),
        "late_sends": _get(result, "rate", "late_sends"),
        "sends": _get(result, "rate", "sends"),
    }


def frame(records: list[dict], cores: Optional[int] = None):
    """The tidy pandas DataFrame of a results list (one row per cell and repeat)."""
    import pandas as pd

    return pd.DataFrame([flatten(r, cores) for r in records])


@dataclass
class Aggregate:
    """The repeats of one (target, protocol, workload, mode, load) folded together."""

    target: str
    protocol: str
    workload: str
    mode: str
    load: int  # connections (closed, connect) or percent of capacity (open)
    status: str  # "ok" (at least one repeat measured), "fail" (none did), "skipped"
    repeats: int = 0
    failed: int = 0
    note: Optional[str] = None  # the error of a failed cell, the reason of a skipped one
    rps: Optional[Spread] = None
    p50_ms: Optional[Spread] = None
    p99_ms: Optional[Spread] = None
    p999_ms: Optional[Spread] = None
    max_ms: Optional[Spread] = None
    p99_uncorrected_ms: Optional[Spread] = None
    target_rate: Optional[Spread] = None
    late_sends: Optional[Spread] = None
    mean_ms: Optional[Spread] = None
    cpu_us: Optional[Spread] = None
    # heap allocation calls and bytes per response (the allocation counter), or why not counted
    allocs_per_req: Optional[Spread] = None
    alloc_bytes_per_req: Optional[Spread] = None
    allocs_na: Optional[str] = None
    inflight: Optional[Spread] = None
    conn_per_s: Optional[Spread] = None
    # connection-setup cells: CPU per new connection / full handshake, generator and server
    generator_cpu_us_per_conn: Optional[Spread] = None
    server_cpu_us_per_conn: Optional[Spread] = None
    rss_peak_mib: Optional[float] = None
    rss_source: Optional[str] = None
    steal_share: Optional[float] = None
    starved: bool = False
    starved_cause: Optional[str] = None
    generator_bound: bool = False
    # the generator's CPU per connection exceeded the server's (a connection-setup cell)
    setup_generator_bound: bool = False
    # non-2xx answers and errors over the measured repeats, pooled
    bad_share: Optional[float] = None
    status_codes: dict = field(default_factory=dict)
    error_kinds: dict = field(default_factory=dict)
    outside_share: Optional[float] = None  # the most any kept repeat saw
    contended: bool = False
    reruns: int = 0

    @property
    def key(self) -> Key:
        return (self.target, self.protocol, self.workload, self.mode, self.load)

    @property
    def allocations_counted(self) -> bool:
        """The cell ran with the allocation counter: it has a figure or says why it has none."""
        return self.allocs_per_req is not None or self.allocs_na is not None

    @property
    def connections(self) -> Optional[int]:
        return None if self.mode == "open" else self.load

    @property
    def load_pct(self) -> Optional[int]:
        return self.load if self.mode == "open" else None

    @property
    def dirty(self) -> bool:
        """More than 1 % of outcomes were non-2xx answers or errors."""
        return self.bad_share is not None and self.bad_share > analysis.DIRTY_SHARE

    @property
    def ranked(self) -> bool:
        """Ranked for throughput (and so for latency): may be bold for req/s, enters peaks, req/s
        averages and the rank order."""
        return self.ranked_for("rps")

    def ranked_for(self, metric: str = "rps") -> bool:
        """Enters the peaks, averages and rankings of ``metric`` (an Aggregate attribute such as
        rps, mean_ms, cpu_us, rss_peak_mib) - as a bound when :meth:`bound_for` says so."""
        return self.status == "ok" and not self.exclusions(metric)

    @property
    def bounded_by_generator(self) -> bool:
        """The generator was the limit (§): closed loop saturated, or connection setup where the
        generator's CPU per connection exceeded the server's."""
        return self.generator_bound or self.setup_generator_bound

    def bound_for(self, metric: str = "rps") -> Optional[str]:
        """ "lower" / "upper" when this cell's ``metric`` is a bound on the server's (§ cells, see
        BOUNDED_METRICS), else None (measured)."""
        return BOUNDED_METRICS.get(metric) if self.bounded_by_generator else None

    def figure(self, metric: str = "rps") -> Optional[Figure]:
        """The cell's median ``metric`` as a :class:`Figure` that carries its bound."""
        spread = getattr(self, metric, None)
        value = spread.median if isinstance(spread, Spread) else spread
        return (
            None
            if value is None
            else Figure(value, self.bound_for(metric), int(bool(self.bound_for(metric))))
        )

    def exclusions(self, metric: str = "rps") -> list[str]:
        """Why a measured cell is not ranked for ``metric`` (empty when it is). A generator-bound
        cell is excluded only for the metrics it bounds nothing of (latency percentiles): see
        SERVER_COST_METRICS and BOUNDED_METRICS."""
        out = []
        if self.dirty:
            out.append(f"{100 * self.bad_share:.1f} % non-2xx/errors")
        if self.contended and metric not in COUNT_METRICS:
            out.append(
                "contended"
                + (
                    f" ({100 * self.outside_share:.0f} % outside CPU)"
                    if self.outside_share is not None
                    else ""
                )
            )
        if metric in SERVER_COST_METRICS or metric in BOUNDED_METRICS:
            return out
        if (
            self.setup_generator_bound
            and self.generator_cpu_us_per_conn
            and self.server_cpu_us_per_conn
        ):
            out.append(
                f"generator-bound (generator {self.generator_cpu_us_per_conn.median:.0f} us > server "
                f"{self.server_cpu_us_per_conn.median:.0f} us CPU per connection)"
            )
        elif self.generator_bound:
            out.append("generator-bound")
        return out

    def exclusion_words(self, metric: str = "rps") -> list[str]:
        """:meth:`exclusions` in a word each (for a chart's gap label)."""
        return [("errors" if "non-2xx" in r else r.split(" (")[0]) for r in self.exclusions(metric)]

    def top_outcomes(self, n: int = 3) -> str:
        """'503 x 3 000, timeout x 12': the most frequent non-2xx codes and error kinds."""
        bad = Counter(
            {f"{c}": v for c, v in self.status_codes.items() if not str(c).startswith("2")}
        )
        bad.update(self.error_kinds)
        return ", ".join(f"{k} x {v:,}".replace(",", " ") for k, v in bad.most_common(n))


def aggregate(rows: list[dict]) -> dict[Key, Aggregate]:
    """Median-of-repeats per cell key from flattened rows (see :func:`flatten`).

    Failed repeats do not enter the medians; a cell is FAIL only when no repeat measured.
    Under-driven is judged on the median in-flight count; generator-bound and contended when
    any kept repeat was; non-2xx/errors pooled over the measured repeats."""
    groups: dict[Key, list[dict]] = {}
    for row in rows:
        key = (
            row["target"],
            row["protocol"],
            row["workload"],
            row["mode"],
            row.get("load", row.get("connections")),
        )
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
            _fill(agg, ok)
        out[key] = agg
    return out


def _fill(agg: Aggregate, ok: list[dict]) -> None:
    def pick(name: str) -> Optional[Spread]:
        return analysis.median_spread([r.get(name) for r in ok])

    agg.rps, agg.p50_ms, agg.p99_ms = pick("rps"), pick("p50_ms"), pick("p99_ms")
    agg.mean_ms, agg.cpu_us, agg.inflight = (
        pick("mean_ms"),
        pick("server_cpu_us_per_req"),
        pick("inflight"),
    )
    agg.conn_per_s, agg.p999_ms, agg.max_ms = pick("conn_per_s"), pick("p999_ms"), pick("max_ms")
    agg.allocs_per_req = pick("allocs_per_req")
    agg.alloc_bytes_per_req = pick("alloc_bytes_per_req")
    agg.allocs_na = next((r["allocs_na"] for r in ok if r.get("allocs_na")), None)
    if agg.mode == "open":
        agg.p99_uncorrected_ms, agg.target_rate = pick("p99_uncorrected_ms"), pick("target_rate")
        agg.late_sends = pick("late_sends")
    rss = [r["rss_peak_mib"] for r in ok if r.get("rss_peak_mib") is not None]
    agg.rss_peak_mib = max(rss) if rss else None
    agg.rss_source = next((r["rss_source"] for r in ok if r.get("rss_source")), None)
    steal = [r["steal_share"] for r in ok if r.get("steal_share") is not None]
    agg.steal_share = max(steal) if steal else None
    if agg.mode == "closed" and agg.inflight is not None:
        errors = sum(r.get("errors") or 0 for r in ok)
        reconnects = sum(r.get("reconnects") or 0 for r in ok)
        agg.starved_cause = analysis.underdriven_cause(
            agg.inflight.median, agg.load, errors, reconnects
        )
        agg.starved = agg.starved_cause is not None
    agg.generator_bound = any(r.get("generator_bound") for r in ok)
    agg.generator_cpu_us_per_conn = pick("generator_cpu_us_per_conn")
    agg.server_cpu_us_per_conn = pick("server_cpu_us_per_conn")
    agg.setup_generator_bound = any(r.get("setup_generator_bound") for r in ok)
    codes: Counter = Counter()
    kinds: Counter = Counter()
    for r in ok:
        codes.update(r.get("status_codes") or {})
        kinds.update(r.get("error_kinds") or {})
    agg.status_codes, agg.error_kinds = dict(codes), dict(kinds)
    responses = sum(r.get("responses") or 0 for r in ok)
    if any(r.get("bad_share") is not None for r in ok):
        agg.bad_share = analysis.bad_share(analysis.non_2xx(codes), sum(kinds.values()), responses)
    outside = [r["outside_share"] for r in ok if r.get("outside_share") is not None]
    agg.outside_share = max(outside) if outside else None
    agg.contended = any(r.get("contended") for r in ok)
    agg.reruns = sum(r.get("reruns") or 0 for r in ok)


def common_closed_cells(
    aggs: dict[Key, Aggregate], targets: list[str], metric: str = "rps"
) -> set[tuple]:
    """(protocol, workload, connections) of the closed-loop cells ranked for ``metric`` that
    every server with any such cell has: averages over them do not favour a server for the cells
    it skipped (node without https, nginx without echo) or lost to errors or contention. Per
    metric, because a generator-bound cell is ranked for CPU us/req but not for req/s."""
    common: Optional[set] = None
    for t in targets:
        mine = {
            (k[1], k[2], k[4])
            for k, a in aggs.items()
            if k[0] == t and k[3] == "closed" and a.ranked_for(metric)
        }
        if mine:
            common = mine if common is None else common & mine
    return common or set()


def _ordered(declared: Optional[list], seen: list[str]) -> list[str]:
    names = [d["name"] for d in declared or [] if isinstance(d, dict) and "name" in d]
    for s in seen:
        if s not in names:
            names.append(s)
    return [n for n in names if n in set(seen)]


@dataclass
class Model:
    """Everything a report, chart or notebook shows about one results folder.

    ``records``, ``rows`` and ``aggs`` are the load cells (closed, connect, open) only: hold
    cells (memory per idle connection) measure no req/s or latency, so they are kept in
    ``hold_records`` and shown by :meth:`memory_per_connection`, never in a load aggregate."""

    settings: dict
    environment: dict
    records: list[dict]
    rows: list[dict]
    aggs: dict[Key, Aggregate]
    targets: list[str]
    workloads: list[str]
    protocols: list[str]
    directory: Optional[Path] = None
    hold_records: list[dict] = field(default_factory=list)
    # capacity cells (one search each): no single req/s or latency, folded by capacities()
    capacity_records: list[dict] = field(default_factory=list)

    def capacities(self) -> dict[tuple[str, str], CapacityCell]:
        """Per (server, protocol), its capacity searches folded (report/capacity.py)."""
        return fold_capacity(self.capacity_records)

    def memory_per_connection(self) -> dict[str, IdleMemory]:
        """Per server, its hold cells folded: medians over repeats of the server's RSS and PSS
        growth per idle connection, connections held, 2xx answers and the generator's growth
        per connection (see :class:`loadbench.idle_memory.IdleMemory`). Servers in report
        order, then any that had hold cells only."""
        folded = fold_idle_memory(self.hold_records)
        order = [t for t in self.targets if t in folded] + [
            t for t in folded if t not in self.targets
        ]
        return {t: folded[t] for t in order}

    def cells(
        self,
        target: Optional[str] = None,
        protocol: Protocols = None,
        workload: Optional[str] = None,
        mode: Optional[str] = "closed",
    ) -> list[Aggregate]:
        """``protocol``: one name, several (a tuple: e.g. HTTP2_PROTOCOLS) or None for all."""
        return [
            a
            for a in self.aggs.values()
            if (target is None or a.target == target)
            and _matches(a.protocol, protocol)
            and (workload is None or a.workload == workload)
            and (mode is None or a.mode == mode)
        ]

    def peak(
        self, target: str, protocol: Protocols = None, workload: Optional[str] = None
    ) -> Optional[Figure]:
        """The best median req/s of the server's ranked closed-loop cells. A lower bound ("≥")
        when any of those cells is generator-bound: such a cell may hide a higher value than the
        best measured one, whichever cell the best figure came from."""
        return self._best(target, protocol, workload, "rps", higher_is_better=True)

    def peak_cell(
        self, target: str, protocol: Protocols = None, workload: Optional[str] = None
    ) -> Optional[Aggregate]:
        """The ranked closed-loop cell :meth:`peak` took its figure from (where the peak was)."""
        cells = [a for a in self.cells(target, protocol, workload) if a.ranked and a.rps]
        return max(cells, key=lambda a: a.rps.median, default=None)

    def best_cpu(
        self, target: str, protocol: Protocols = None, workload: Optional[str] = None
    ) -> Optional[Figure]:
        """The lowest median CPU us/req of the server's closed-loop cells ranked for CPU us/req:
        the CPU counterpart of :meth:`peak` (a generator-bound cell counts; see SERVER_COST_METRICS)."""
        return self._best(target, protocol, workload, "cpu_us", higher_is_better=False)

    def counts_allocations(self) -> bool:
        """The sweep counted heap allocations (allocations = true): some cell has a figure or
        says why it has none."""
        return any(a.allocations_counted for a in self.aggs.values())

    def best_allocs(
        self,
        target: str,
        protocol: Protocols = None,
        workload: Optional[str] = None,
        metric: str = "allocs_per_req",
    ) -> Optional[Figure]:
        """The lowest median heap allocations (``metric``: allocs_per_req or alloc_bytes_per_req)
        per response of the server's closed-loop cells ranked for it: ranked like CPU us/req (the
        server's own cost, so a generator-bound cell counts)."""
        return self._best(target, protocol, workload, metric, higher_is_better=False)

    def allocation_gap(self, target: str) -> Optional[str]:
        """Why the server's allocations are n/a (the counter could not see its heap), or None."""
        return next((a.allocs_na for a in self.cells(target, mode=None) if a.allocs_na), None)

    def allocation_sites(self) -> dict:
        """target -> its heaptrack window (allocation_sites.json of the results folder; {} when
        the sweep recorded none)."""
        return ResultsFolder(self.directory).allocation_sites() if self.directory else {}

    def allocator(self, target: str) -> str:
        """What the allocation counter sees of the server's heap, as its target declares it."""
        for t in self.settings.get("targets") or []:
            if isinstance(t, dict) and t.get("name") == target:
                return t.get("allocator") or ""
        return ""

    def _best(
        self,
        target: str,
        protocol: Protocols,
        workload: Optional[str],
        metric: str,
        higher_is_better: bool,
    ) -> Optional[Figure]:
        figures = [
            f
            for a in self.cells(target, protocol, workload)
            if a.ranked_for(metric) and (f := a.figure(metric)) is not None
        ]
        if not figures:
            return None
        best = (max if higher_is_better else min)(figures, key=float)
        bounded = sum(1 for f in figures if f.bound)
        # the bound of an extreme over cells of which some are bounds: any of them may be better
        bound = next((f.bound for f in figures if f.bound), None) if bounded else None
        return Figure(float(best), bound, bounded, len(figures))

    def common(
        self, protocol: Protocols = None, workload: Optional[str] = None, metric: str = "rps"
    ) -> set[tuple]:
        """The cells the averages of ``metric`` run over (see :func:`common_closed_cells`)."""
        aggs = {
            k: a
            for k, a in self.aggs.items()
            if _matches(k[1], protocol) and (workload is None or k[2] == workload)
        }
        return common_closed_cells(aggs, self.targets, metric)

    def average(
        self,
        target: str,
        protocol: Protocols = None,
        metric: str = "rps",
        workload: Optional[str] = None,
    ) -> Optional[Figure]:
        """Mean of the median ``metric`` (rps, cpu_us, mean_ms) over the cells every server has
        ranked for that metric (of ``protocol`` and ``workload`` when given). A bound when any
        averaged cell is one (``bounded`` of ``cells`` say how many)."""
        common = self.common(protocol, workload, metric)
        cells = [
            a
            for a in self.cells(target, protocol, workload)
            if a.ranked_for(metric) and (a.protocol, a.workload, a.load) in common
        ]
        figures = [f for a in cells if (f := a.figure(metric)) is not None]
        mean = analysis.arithmetic_mean(figures)
        if mean is None:
            return None
        bounded = sum(1 for f in figures if f.bound)
        return Figure(
            mean, next((f.bound for f in figures if f.bound), None), bounded, len(figures)
        )

    def mean_latency(self, target: str, protocol: Protocols = None) -> Optional[Figure]:
        """Mean latency (ms): the mean of the cells' median mean latency over the same cells as
        :meth:`average` (seed report 001's "mean latency", per protocol or overall); an upper
        bound ("≤") when generator-bound cells entered it."""
        return self.average(target, protocol, metric="mean_ms")

    def peak_ranks(
        self, protocol: Protocols = None, workload: Optional[str] = None
    ) -> dict[str, Rank]:
        """Each server's place by peak req/s, as far as the figures make it certain."""
        return analysis.certain_ranks(
            {t: self.peak(t, protocol, workload) for t in self.targets}, higher_is_better=True
        )

    def ranks(self, values: dict[str, Optional[float]], higher_is_better: bool) -> dict[str, Rank]:
        """Certain ranks of any per-server figures (averages, mean latency, CPU us/req)."""
        return analysis.certain_ranks(values, higher_is_better=higher_is_better)

    def h2_h1_ratio(self, target: str, http1: str, http2: str) -> Optional[Figure]:
        """Peak over ``http2`` / peak over ``http1`` (seed 001's H2 / H1 peak ratio), with the
        bound that follows from the peaks' (see :func:`loadbench.analysis.figure_ratio`)."""
        return analysis.figure_ratio(self.peak(target, http2), self.peak(target, http1))

    def h3_h2_ratio(self, target: str) -> Optional[Figure]:
        """Peak over h3 / peak over h2 (HTTP/3 against the HTTP/2 over TLS it replaces), with
        the bound that follows from the peaks'."""
        return analysis.figure_ratio(self.peak(target, "h3"), self.peak(target, "h2"))

    def pairs(self) -> list[tuple[str, str, str]]:
        """(label, HTTP/1.1 protocol, HTTP/2 protocol) for each pair this sweep measured at least half of."""
        return [p for p in PROTOCOL_PAIRS if p[1] in self.protocols or p[2] in self.protocols]

    def unserved(self, target: str, protocol: Protocols = None) -> Optional[str]:
        """Why the server has no cell of ``protocol``: the reason its skipped cells recorded."""
        cells = self.cells(target, protocol, mode=None)
        if any(a.status == "ok" for a in cells):
            return None
        return next((a.note for a in cells if a.status == "skipped" and a.note), None)

    def variants(self) -> list[tuple[str, str]]:
        """(base, variant) for every measured target whose settings say ``variant_of = base``."""
        out = []
        for t in self.settings.get("targets") or []:
            if (
                isinstance(t, dict)
                and t.get("variant_of") in self.targets
                and t.get("name") in self.targets
            ):
                out.append((t["variant_of"], t["name"]))
        return out

    def speedup(
        self,
        base: str,
        variant: str,
        protocol: Protocols = None,
        workload: Optional[str] = None,
        kind: str = "peak",
    ) -> Optional[Figure]:
        """``variant`` over ``base``: peaks (kind="peak") or averages (kind="average")."""
        if kind == "peak":
            return analysis.figure_ratio(
                self.peak(variant, protocol, workload), self.peak(base, protocol, workload)
            )
        return analysis.figure_ratio(
            self.average(variant, protocol, workload=workload),
            self.average(base, protocol, workload=workload),
        )

    def rss(self, target: str) -> Optional[float]:
        """Peak RSS (MiB) over every measured cell of the server (contention does not move it)."""
        mem = [
            a.rss_peak_mib
            for a in self.aggs.values()
            if a.target == target and a.rss_peak_mib is not None
        ]
        return max(mem) if mem else None

    def excluded(self, target: Optional[str] = None, metric: str = "rps") -> list[Aggregate]:
        """Measured cells not ranked for ``metric`` (default req/s: left out of its bold marks,
        peaks and averages; see Aggregate.exclusions)."""
        return [
            a
            for a in self.aggs.values()
            if a.status == "ok"
            and not a.ranked_for(metric)
            and (target is None or a.target == target)
        ]

    def bounded(self, target: Optional[str] = None, metric: str = "rps") -> list[Aggregate]:
        """Ranked cells whose ``metric`` is a bound (generator-bound, §): they enter peaks,
        averages and rankings as what they prove."""
        return [
            a
            for a in self.aggs.values()
            if a.ranked_for(metric)
            and a.bound_for(metric)
            and (target is None or a.target == target)
        ]

    def gap(self, cells: list[Aggregate], metric: str = "rps") -> str:
        """What a chart prints where a server has no ranked value: why, in a word or two."""
        measured = [a for a in cells if a.status == "ok"]
        if measured:
            words = sorted({w for a in measured for w in a.exclusion_words(metric)})
            # measured and ranked, but none of the cells is one every server has (an average)
            return "excluded: " + ", ".join(words) if words else "no cell all servers share"
        return "FAIL" if any(a.status == "fail" for a in cells) else "n/a"

    def cells_frame(self):
        """The cells (median of repeats) as a pandas DataFrame: what the report's tables show."""
        import pandas as pd

        def med(spread: Optional[Spread]) -> Optional[float]:
            return None if spread is None else spread.median

        return pd.DataFrame(
            [
                {
                    "target": a.target,
                    "protocol": a.protocol,
                    "workload": a.workload,
                    "mode": a.mode,
                    "load": a.load,
                    "status": a.status,
                    "repeats": a.repeats,
                    "rps": med(a.rps),
                    "rps_min": a.rps.min if a.rps else None,
                    "rps_max": a.rps.max if a.rps else None,
                    "p50_ms": med(a.p50_ms),
                    "p99_ms": med(a.p99_ms),
                    "cpu_us": med(a.cpu_us),
                    "inflight": med(a.inflight),
                    "bad_share": a.bad_share,
                    "outside_share": a.outside_share,
                    "contended": a.contended,
                    "starved": a.starved,
                    "generator_bound": a.generator_bound,
                    "generator_cpu_us_per_conn": med(a.generator_cpu_us_per_conn),
                    "server_cpu_us_per_conn": med(a.server_cpu_us_per_conn),
                    "ranked": a.ranked,
                    "ranked_cpu": a.ranked_for("cpu_us"),
                    # the req/s of a generator-bound cell is a lower bound on the server's ("≥")
                    "rps_lower_bound": a.ranked and a.bound_for("rps") == "lower",
                }
                for a in self.aggs.values()
            ]
        )

    @property
    def cores(self) -> Optional[int]:
        env = self.environment
        return env.get("logical_cores") or _get(env, "cpu", "logical_cores")


def build(
    settings: dict, environment: dict, records: list[dict], directory: Optional[Path] = None
) -> Model:
    cores = environment.get("logical_cores") or _get(environment, "cpu", "logical_cores")
    share = settings.get("contended_share") or analysis.CONTENDED_SHARE
    held = [r for r in records if is_hold(r)]
    searched = [r for r in records if is_capacity(r)]
    records = [r for r in records if not is_hold(r) and not is_capacity(r)]
    rows = [flatten(r, cores, share) for r in records]
    aggs = aggregate(rows)
    return Model(
        settings,
        environment,
        records,
        rows,
        aggs,
        targets=_ordered(settings.get("targets"), [r["target"] for r in rows]),
        workloads=_ordered(settings.get("workloads"), [r["workload"] for r in rows]),
        protocols=[p for p in PROTOCOL_ORDER if any(r["protocol"] == p for r in rows)],
        directory=directory,
        hold_records=held,
        capacity_records=searched,
    )


def load(results_dir) -> Model:
    """The model of a results folder (sweep.json, environment.json, results.jsonl)."""
    settings, environment, records = ResultsFolder(results_dir).load()
    return build(settings, environment, records, Path(results_dir))
