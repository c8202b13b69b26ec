"""A cell of the report model: the repeats of one (server, protocol, workload, mode, load)
folded into an :class:`Aggregate` - medians with min/max, the marks (✗ errors, ⚑ contended,
‡ under-driven, § generator-bound, ¶ pool-bound, ↗ not steady) and, per metric, whether it
ranks and what its :class:`~loadbench.core.figures.Figure` proves (a bound, closed by the
server's CPU ceiling, and the repeats' spread). :func:`aggregate` builds them from the tidy rows
of report/rows.py.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ..core import analysis
from ..core.analysis import Figure, Spread
from ..core.phases import PHASES

Key = tuple  # (target, protocol, workload, mode, load): load = C, or % of capacity (open)

# The metrics a generator-bound (§) cell still ranks on, under every name the code uses for them
# (the Aggregate attribute, the tidy row's column, the comparison's short name): CPU per response
# divides the server's own CPU by the responses it served, and memory is the server's, so neither
# is the generator's limit - unlike req/s and latency, which are capped by it.
# Heap allocations per response are counts, not times: other processes taking the CPU do not
# change them, so a contended cell still ranks on them (an erroring one does not).
COUNT_METRICS = frozenset({"allocs_per_req", "alloc_bytes_per_req", "allocs", "alloc_bytes"})
# System calls and context switches per response are the server's own cost too, so they rank
# where CPU us/req does - but not in a contended cell: a server that shares its CPUs batches
# differently (fewer events per epoll_wait, more involuntary switches), so they are not
# COUNT_METRICS.
KERNEL_METRICS = frozenset({"syscalls_per_req", "syscalls", "ctx_switches_per_req", "ctx_switches"})
SERVER_COST_METRICS = (
    frozenset({"cpu_us", "server_cpu_us_per_req", "cpu", "rss_peak_mib", "rss"})
    | COUNT_METRICS
    | KERNEL_METRICS
)
# What a generator-bound cell's figure proves for the metrics it bounds (the same names' rule):
# req/s and the connection rate are at least what was measured (the server would have done more
# for a faster generator); the mean latency of a closed loop is at most what was measured (C =
# req/s x mean latency, Little's law, with req/s only higher). Percentiles are bounded by nothing.
BOUNDED_METRICS = {"rps": "lower", "conn_per_s": "lower", "mean_ms": "upper"}
# A server that makes the generator open a new connection for more than this share of its
# responses (it closes kept-alive connections: ruby-puma closed one every ~10.6 requests in vm-3)
# is not measured on the C kept-alive connections the column claims: its latency carries the
# reconnects (its in-flight count, req/s x mean latency, read 34.1 at C = 25). Marked, not
# left out: closing connections is the server's own behaviour.
RECONNECT_SHARE = 0.01


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
    # system calls and context switches per response (the sampler), or why the kernel refused
    syscalls_per_req: Optional[Spread] = None
    syscalls_na: Optional[str] = None
    ctx_switches_per_req: Optional[Spread] = None
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
    # open loop: sends waited for a free connection while the server had CPU to spare (¶)
    pool_bound: bool = False
    # why the first bounded repeat was bounded (core/limits.py's reason), for the notes
    limit_reason: Optional[str] = None
    # the median over repeats of each one's upper end of req/s: its CPU ceiling where the
    # generator or the pool was the limit (inf without one), its measured req/s elsewhere
    rps_high: Optional[float] = None
    # req/s of the repeats in the order they ran, and whether they only climbed (↗)
    rps_in_order: tuple = ()
    not_steady: bool = False
    # non-2xx answers and errors over the measured repeats, pooled
    bad_share: Optional[float] = None
    status_codes: dict = field(default_factory=dict)
    error_kinds: dict = field(default_factory=dict)
    outside_share: Optional[float] = None  # the most any kept repeat saw
    # where the time went (core/phases.py): per measured phase, the medians over repeats of its
    # p50 and p99 in microseconds
    phases: dict[str, tuple[Optional[Spread], Optional[Spread]]] = field(default_factory=dict)
    contended: bool = False
    reruns: int = 0
    # reconnects the generator made and responses, summed over the measured repeats
    reconnects: int = 0
    responses: int = 0

    @property
    def key(self) -> Key:
        return (self.target, self.protocol, self.workload, self.mode, self.load)

    @property
    def allocations_counted(self) -> bool:
        """The cell ran with the allocation counter: it has a figure or says why it has none."""
        return self.allocs_per_req is not None or self.allocs_na is not None

    @property
    def kernel_counted(self) -> bool:
        """The cell's results carry the sampler's system calls (a figure or why not) or context
        switches per response (results from before they were counted carry neither)."""
        return (
            self.syscalls_per_req is not None
            or self.syscalls_na is not None
            or self.ctx_switches_per_req is not None
        )

    @property
    def connections(self) -> Optional[int]:
        return None if self.mode == "open" else self.load

    @property
    def load_pct(self) -> Optional[int]:
        return self.load if self.mode == "open" else None

    @property
    def reconnect_share(self) -> Optional[float]:
        """Reconnects per response over the measured repeats (None without responses)."""
        return self.reconnects / self.responses if self.responses else None

    @property
    def reconnecting(self) -> bool:
        """More than RECONNECT_SHARE of the responses needed a new connection (↻)."""
        return (self.reconnect_share or 0.0) > RECONNECT_SHARE

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
        """The generator side was the limit: its threads (§; core/limits.py's rule, from both
        sides' CPU), its connection pool (¶, open loop), or - connection setup - its CPU per
        connection exceeded the server's."""
        return self.generator_bound or self.setup_generator_bound or self.pool_bound

    @property
    def mark(self) -> str:
        """ "¶" for a pool-bound cell, "§" for a generator-bound one, else ""."""
        return "¶" if self.pool_bound else "§" if self.bounded_by_generator else ""

    def bound_for(self, metric: str = "rps") -> Optional[str]:
        """ "lower" / "upper" when this cell's ``metric`` is a bound on the server's (§ cells, see
        BOUNDED_METRICS), else None (measured)."""
        # an open-loop cell's req/s is the rate it was asked for, a bound of nothing: its marks
        # (§ ¶) say its latency is not the server's
        if self.mode == "open" or not self.bounded_by_generator:
            return None
        return BOUNDED_METRICS.get(metric)

    def figure(self, metric: str = "rps") -> Optional[Figure]:
        """The cell's median ``metric`` as a :class:`Figure` that carries its bound, the
        interval the server's CPU ceiling closes (req/s of a bounded cell: [measured, ceiling];
        its mean latency, by Little's law, [measured x measured / ceiling, measured]) and the
        repeats' min-max (the noise)."""
        spread = getattr(self, metric, None)
        value = spread.median if isinstance(spread, Spread) else spread
        if value is None:
            return None
        bound = self.bound_for(metric)
        interval = None
        high = self.rps_high if self.rps is not None else None
        if bound and high is not None and math.isfinite(high) and high > self.rps.median:
            if metric == "rps":
                interval = (value, high)
            elif metric == "mean_ms":
                interval = (value * self.rps.median / high, value)
        noise, samples = None, None
        if isinstance(spread, Spread):
            noise = spread.confidence  # the replications' interval (core/replication.py)
            blocks = spread.blocks
            samples = blocks if len(blocks) == spread.n and spread.n > 1 else None
        return Figure(value, bound, int(bool(bound)), 1, interval, noise, samples)

    def exclusions(self, metric: str = "rps") -> list[str]:
        """Why a measured cell is not ranked for ``metric`` (empty when it is). A generator-bound
        cell is excluded only for the metrics it bounds nothing of (latency percentiles): see
        SERVER_COST_METRICS and BOUNDED_METRICS."""
        out = []
        if self.not_steady and metric not in COUNT_METRICS:
            out.append(
                "not steady ("
                + " → ".join(f"{v:,.0f}".replace(",", " ") for v in self.rps_in_order)
                + " req/s)"
            )
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
        elif self.pool_bound:
            out.append("pool-bound")
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
    Under-driven is judged on the median in-flight count; generator- and pool-bound when most
    kept repeats were (:func:`_bounds`), contended when any was; non-2xx/errors pooled over
    the measured repeats."""
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
    blocks = [r.get("block") for r in ok]  # the sweep block each repeat ran in (runner.py)

    def pick(name: str) -> Optional[Spread]:
        return analysis.median_spread([r.get(name) for r in ok], blocks)

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
    agg.phases = {
        name: (pick(f"phase_{name}_p50_us"), pick(f"phase_{name}_p99_us"))
        for name in PHASES
        if any(r.get(f"phase_{name}_p50_us") is not None for r in ok)
    }
    agg.syscalls_per_req = pick("syscalls_per_req")
    agg.ctx_switches_per_req = pick("ctx_switches_per_req")
    # why not, only where no repeat was counted (the figure is the counted repeats' median)
    if agg.syscalls_per_req is None:
        agg.syscalls_na = next((r["syscalls_na"] for r in ok if r.get("syscalls_na")), None)
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
    _bounds(agg, ok)
    agg.limit_reason = next(
        (r["limit_reason"] for r in ok if r.get("limit_by") in ("generator", "pool")), None
    )
    agg.rps_high = analysis.median([_high(r) for r in ok if r.get("rps") is not None])
    in_order = sorted(ok, key=lambda r: r.get("repeat") or 0)
    agg.rps_in_order = tuple(r["rps"] for r in in_order if r.get("rps") is not None)
    agg.not_steady = agg.mode == "closed" and analysis.not_steady(agg.rps_in_order)
    agg.generator_cpu_us_per_conn = pick("generator_cpu_us_per_conn")
    agg.server_cpu_us_per_conn = pick("server_cpu_us_per_conn")
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
    agg.reconnects, agg.responses = sum(r.get("reconnects") or 0 for r in ok), responses


def _majority(ok: list[dict], *names: str) -> bool:
    """More than half of the measured repeats carry any of the flags ``names``."""
    return 2 * sum(1 for r in ok if any(r.get(n) for n in names)) > len(ok)


def _bounds(agg: Aggregate, ok: list[dict]) -> None:
    """The cell's § / ¶ marks by the majority of its repeats: one repeat of three that the
    generator limited does not make the other two's figure a bound (vm-3 marked nim's
    connection setup generator-bound from one repeat while the generator used less CPU than
    the server in the cell). A majority bounded on the generator side carries the side most of
    them name (§ on a tie)."""
    agg.setup_generator_bound = _majority(ok, "setup_generator_bound")
    bounded = _majority(ok, "generator_bound", "pool_bound")
    by_generator = sum(1 for r in ok if r.get("generator_bound"))
    by_pool = sum(1 for r in ok if r.get("pool_bound") and not r.get("generator_bound"))
    agg.generator_bound = agg.setup_generator_bound or (bounded and by_generator >= by_pool)
    agg.pool_bound = bounded and not agg.generator_bound


def _high(row: dict) -> float:
    """The upper end of one repeat's req/s: measured where the server was the limit; the CPU
    ceiling where the generator or its pool was - the one the whole folder proves for the server
    and protocol where the row carries it (``folder_ceiling_rps``, report/ceilings.py; None:
    dropped), else the run's own - infinite without a ceiling, or with one below the measured
    value: a CPU reading that proves nothing."""
    rps = float(row["rps"])
    if row.get("limit_by") not in ("generator", "pool"):
        return rps
    ceiling = row.get("folder_ceiling_rps", row.get("ceiling_rps"))
    return float(ceiling) if ceiling and ceiling > rps else math.inf


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
