"""The ONE report model of a sweep: rows, cells (median of repeats), peaks, averages (over
each server's own cells, compared pair by pair over the cells two servers share), RSS, flags,
and what each figure proves. report.md (document.py), the charts (charts.py, the HTML
dashboard: dashboard.py), the notebooks, `loadbench compare` and bench/ all draw from it, so a
number means the same thing wherever it appears.

    m = loadbench.model.load("reports/2026-11-29-host")
    m.peak("beast", "http"), m.average("beast", "http"), m.rss("beast"), m.excluded("py")
    m.peak_ranks("http")["beast"].text()   # '2', '1st-3rd (within noise of nginx, rust-axum)'
    m.listed, m.unmeasured()              # the servers measured; the others and why
    m.memory_per_connection()["beast"].rss_bytes_per_connection   # hold cells, apart from the load

The arithmetic itself (median, Little's law, CPU/req, outside CPU, the flags' rules) lives in
:mod:`loadbench.analysis`, what a figure proves and the orders it supports in
:mod:`loadbench.core.figures`, each defined once; the rows and cells are report/rows.py and
report/cells.py; this module applies them to the records.

A cell *enters* a metric's peaks, averages and rankings (``ranked_for``) when it measured
something (status ok), at most 1 % of its outcomes were non-2xx or errors, no other process
took more than the contended share of the machine during its window, and its repeats did not
only climb (↗ not steady). Who limited it is core/limits.py's rule from both sides' CPU: a
server that kept 90 % of its cores busy is the limit whatever the generator did; a
generator-bound cell (§) enters for what it proves (see :data:`BOUNDED_METRICS`): its req/s is
a lower bound ("≥") closed from above by the server's CPU ceiling, its mean latency an upper
bound ("≤", Little's law); its latency percentiles prove nothing and are excluded from those;
its CPU us per response and peak memory are the server's own (:data:`SERVER_COST_METRICS`). A
peak, average or ratio built from bounds carries their interval
(:class:`loadbench.analysis.Figure`), and rankings claim only the order that is certain beyond
any bound and the repeats' noise (:func:`loadbench.analysis.certain_ranks`); otherwise a rank is
a range naming the servers it is within noise of or uncertain against. Excluding a lower bound
would turn a fast server into a slow one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..core import analysis, protocols
from ..core.analysis import Figure, Rank, Spread
from ..sweep.results_folder import ResultsFolder
from .behaviour import rss_growth
from .capacity_cells import CapacityCell, is_capacity, open_loop_evidence
from .capacity_cells import fold as fold_capacity
from .ceilings import folder_ceilings

# the cells and rows the model folds, under the names callers have always imported from here
from .cells import (  # noqa: F401
    BOUNDED_METRICS,
    COUNT_METRICS,
    SERVER_COST_METRICS,
    Aggregate,
    Key,
    aggregate,
    common_closed_cells,
)
from .idle_memory import IdleMemory, is_hold
from .idle_memory import fold as fold_idle_memory
from .rows import (  # noqa: F401
    PEAK_MEMORY_SOURCES,
    _get,
    flatten,
    frame,
    limit_of,
    load_of,
    peak_memory,
    pinned_cores,
)

Protocols = Any  # one protocol name, a tuple/list/set of them, or None (every protocol)


def _matches(value: Any, want: Any) -> bool:
    if want is None:
        return True
    if isinstance(want, (tuple, list, set, frozenset)):
        return value in want
    return value == want


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
    # per (server, protocol) the CPU ceiling the whole folder proves (report/ceilings.py)
    ceilings: Optional[dict] = None

    def capacities(self) -> dict[tuple[str, str], CapacityCell]:
        """Per (server, protocol), its capacity searches folded (report/capacity.py); folded
        once, every section asks."""
        if "_capacities" not in self.__dict__:
            cores = pinned_cores(self.settings)
            folded = fold_capacity(self.capacity_records, cores, self.ceilings)
            # the open-loop cells judged by the same rule: a capacity never denies them
            for key, evidence in open_loop_evidence(self.rows).items():
                if key in folded:
                    folded[key].open_loop = evidence
            self.__dict__["_capacities"] = folded
        return self.__dict__["_capacities"]

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
        """``protocol``: one name, several (a tuple: e.g. protocols.names(family="HTTP/2")) or None for all."""
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

    def profiles(self) -> dict:
        """cell key -> its perf profile block (profiles.json of the results folder; {} when the
        sweep profiled nothing)."""
        if "_profiles" not in self.__dict__:  # read once, every section and the dashboard ask
            found = ResultsFolder(self.directory).profiles() if self.directory else {}
            self.__dict__["_profiles"] = found
        return self.__dict__["_profiles"]

    def profile_of(self, cell: Aggregate) -> Optional[dict]:
        """The profile of a closed-loop or connection-setup cell (sweep/profiles.py's key)."""
        load = {"closed": "c", "connect": "connect"}.get(cell.mode)
        if load is None:
            return None
        return self.profiles().get(
            f"{cell.target}|{cell.protocol}|{cell.workload}|{load}{cell.load}"
        )

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
        """The best of the server's ranked figures: its value, and an interval that reaches as
        far as any bounded cell may (a § cell whose CPU ceiling lies below the best measured
        value hides nothing, so the peak stays exact)."""
        figures = [
            f
            for a in self.cells(target, protocol, workload)
            if a.ranked_for(metric) and (f := a.figure(metric)) is not None
        ]
        return (analysis.figure_max if higher_is_better else analysis.figure_min)(figures)

    def _averaged(
        self,
        target: str,
        protocol: Protocols,
        metric: str,
        workload: Optional[str],
        shared_with: Optional[str] = None,
    ) -> list[Aggregate]:
        cells = [a for a in self.cells(target, protocol, workload) if a.ranked_for(metric)]
        if shared_with is not None:
            theirs = {
                (a.protocol, a.workload, a.load)
                for a in self.cells(shared_with, protocol, workload)
                if a.ranked_for(metric)
            }
            cells = [a for a in cells if (a.protocol, a.workload, a.load) in theirs]
        return cells

    def common(
        self, protocol: Protocols = None, workload: Optional[str] = None, metric: str = "rps"
    ) -> set[tuple]:
        """The cells every server ranked for ``metric`` (see :func:`common_closed_cells`): with
        many servers often none, which is why averages no longer need it."""
        aggs = {
            k: a
            for k, a in self.aggs.items()
            if _matches(k[1], protocol) and (workload is None or k[2] == workload)
        }
        return common_closed_cells(aggs, self.targets, metric)

    def scope(
        self, protocol: Protocols = None, workload: Optional[str] = None, metric: str = "rps"
    ) -> set[tuple]:
        """(protocol, workload, C) of every closed-loop cell some server ranked for ``metric``:
        what an average could run over; a server's average covers the part of it it has."""
        return {
            (a.protocol, a.workload, a.load)
            for a in self.cells(None, protocol, workload)
            if a.ranked_for(metric)
        }

    def average(
        self,
        target: str,
        protocol: Protocols = None,
        metric: str = "rps",
        workload: Optional[str] = None,
        shared_with: Optional[str] = None,
    ) -> Optional[Figure]:
        """Mean of the median ``metric`` (rps, cpu_us, mean_ms, p99_ms) over the server's own
        closed-loop cells ranked for it (of ``protocol`` and ``workload`` when given); with
        ``shared_with``, over only the cells that server ranked too - the like-for-like figure a
        comparison of the two uses (:meth:`average_ranks`). ``cells`` of the Figure say how
        many cells it covers (of :meth:`scope`), ``bounded`` how many of them were bounds."""
        figures = [
            f
            for a in self._averaged(target, protocol, metric, workload, shared_with)
            if (f := a.figure(metric)) is not None
        ]
        return analysis.figure_mean(figures)

    def shared_average(
        self, target: str, protocol: Protocols = None, metric: str = "rps"
    ) -> Optional[Figure]:
        """Mean of ``metric`` over the closed-loop cells of ``protocol`` that every server with
        any ranked for it (:meth:`common`): what a chart panel of all servers draws, so no server
        gains from the cells another skipped (vm-3's h2 panel ranked nginx, averaged over its 2
        cells, above h2o over 3; over the 2 both have h2o led). None without such cells."""
        common = self.common(protocol, metric=metric)
        figures = [
            f
            for a in self._averaged(target, protocol, metric, None)
            if (a.protocol, a.workload, a.load) in common and (f := a.figure(metric)) is not None
        ]
        return analysis.figure_mean(figures)

    def mean_latency(
        self, target: str, protocol: Protocols = None, metric: str = "mean_ms"
    ) -> Optional[Figure]:
        """Mean latency (ms): the mean of the cells' median mean latency (or ``metric``
        p99_ms) over the server's cells, as :meth:`average` (seed report 001's "mean latency",
        per protocol or overall); an upper bound ("≤") when generator-bound cells entered it."""
        return self.average(target, protocol, metric=metric)

    def average_ranks(
        self,
        protocol: Protocols = None,
        metric: str = "rps",
        higher_is_better: bool = True,
        workload: Optional[str] = None,
    ) -> dict[str, Rank]:
        """Each server's place by its average, judged pair by pair over the cells the two share
        (a server that skipped echo is compared with another on the workloads both served);
        a pair with no shared cell is open."""

        def verdict(x: str, y: str) -> str:
            mine = self.average(x, protocol, metric, workload, shared_with=y)
            theirs = self.average(y, protocol, metric, workload, shared_with=x)
            if mine is None or theirs is None:
                return "open"
            return analysis.compare(mine, theirs, higher_is_better)

        have = [t for t in self.listed if self.average(t, protocol, metric, workload) is not None]
        return analysis.ranks_by(
            have,
            verdict,
            {
                t: analysis.open_ended(
                    self.average(t, protocol, metric, workload), higher_is_better
                )
                for t in have
            },
        )

    def peak_ranks(
        self, protocol: Protocols = None, workload: Optional[str] = None
    ) -> dict[str, Rank]:
        """Each server's place by peak req/s, as far as the figures (bounds, ceilings and the
        repeats' noise) make it certain."""
        return analysis.certain_ranks(
            {t: self.peak(t, protocol, workload) for t in self.listed}, higher_is_better=True
        )

    def ranks(self, values: dict[str, Optional[float]], higher_is_better: bool) -> dict[str, Rank]:
        """Certain ranks of any per-server figures (mean latency, CPU us/req)."""
        return analysis.certain_ranks(values, higher_is_better=higher_is_better)

    @property
    def listed(self) -> list[str]:
        """The servers the report lists: those the sweep ran - a cell of any kind measured or
        FAILed (a server that died is a finding) - in the sweep's order; not those whose every
        cell was skipped (not installed). Every server when none ran, so a report of nothing
        still says why."""
        if "_listed" not in self.__dict__:
            ran = ("ok", "fail")
            measured = {a.target for a in self.aggs.values() if a.status in ran}
            measured |= {c.target for c in self.capacities().values() if c.status in ran}
            measured |= {r.get("target") for r in self.hold_records if r.get("status") in ran}
            self.__dict__["_listed"] = [t for t in self.targets if t in measured] or list(
                self.targets
            )
        return self.__dict__["_listed"]

    def unmeasured(self) -> dict[str, str]:
        """{server: why} for each server of the sweep with no measured cell at all (not
        installed, say): named once in the report, never a row of n/a."""
        listed = set(self.listed)
        out = {}
        for t in self.targets:
            if t in listed:
                continue
            notes = [a.note for a in self.cells(t, mode=None) if a.note]
            out[t] = notes[0] if notes else "not measured"
        return out

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
        return [p for p in protocols.pairs() if p[1] in self.protocols or p[2] in self.protocols]

    def unserved(self, target: str, protocol: Protocols = None) -> Optional[str]:
        """Why the server has no cell of ``protocol``: the reason its skipped cells recorded."""
        cells = self.cells(target, protocol, mode=None)
        if any(a.status == "ok" for a in cells):
            return None
        return next((a.note for a in cells if a.status == "skipped" and a.note), None)

    def variants(self) -> list[tuple[str, str]]:
        """(base, variant) for every target whose settings say ``variant_of = base``, both
        measured: a variant of a peer that is not installed gets no chart and no section (vm-3
        drew two variant charts without bars and three sections of n/a)."""
        out = []
        for t in self.settings.get("targets") or []:
            if (
                isinstance(t, dict)
                and t.get("variant_of") in self.listed
                and t.get("name") in self.listed
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

    def rss_growth(self, target: Optional[str] = None):
        """Per server whose RSS grew within one process (report/behaviour.py, ⇡): its
        :class:`Growth` (of ``target`` when given, None when it did not grow)."""
        if "_rss_growth" not in self.__dict__:
            self.__dict__["_rss_growth"] = rss_growth(self.rows)
        growth = self.__dict__["_rss_growth"]
        return growth if target is None else growth.get(target)

    def rss(self, target: str) -> Optional[float]:
        """Peak RSS (MiB) over every measured cell of the server (contention does not move it);
        for a server whose RSS grew within a process (⇡), its footprint at the first cell of a
        process that grew - the peak of its later cells is growth, said apart."""
        growth = self.rss_growth(target)
        if growth is not None:
            return growth.first_mib
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
            return "excluded: " + ", ".join(words) if words else "n/a"
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
    rows = [flatten(r, cores, share, pinned_cores(settings)) for r in records]
    ceilings = folder_ceilings(rows, searched, pinned_cores(settings))
    for row in rows:  # the bound every bounded repeat's req/s is closed by (cells._high)
        if (row["target"], row["protocol"]) in ceilings:
            row["folder_ceiling_rps"] = ceilings[(row["target"], row["protocol"])]
    aggs = aggregate(rows)
    return Model(
        settings,
        environment,
        records,
        rows,
        aggs,
        targets=_ordered(settings.get("targets"), [r["target"] for r in rows]),
        workloads=_ordered(settings.get("workloads"), [r["workload"] for r in rows]),
        protocols=[p for p in protocols.NAMES if any(r["protocol"] == p for r in rows)],
        directory=directory,
        hold_records=held,
        capacity_records=searched,
        ceilings=ceilings,
    )


def load(results_dir) -> Model:
    """The model of a results folder (sweep.json, environment.json, results.jsonl)."""
    settings, environment, records = ResultsFolder(results_dir).load()
    return build(settings, environment, records, Path(results_dir))
