"""The markdown vocabulary of report.md: the marks (‡ § ¶ ↗ ↻ ⇡ † ✗ ⚑) and their legend, number
formats (every one writes a bound's "≥"/"≤" before the number), the table helper, the rows a
load table shows and how one cell of it is written and made bold. The sections (tables.py,
prose.py, seed_sections.py, memory.py) are built from these.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

from ..core import analysis
from .behaviour import RSS_GROWTH
from .cells import RECONNECT_SHARE
from .model import Aggregate

STARVED = "‡"
GENERATOR_BOUND = "§"
PARTIAL = "†"
DIRTY = "✗"
CONTENDED = "⚑"
POOL_BOUND = "¶"
NOT_STEADY = "↗"
RECONNECTING = "↻"
RSS_GROWING = "⇡"

LEGEND = (
    f"(Best server per column in bold, per metric: highest req/s, lowest latency and CPU us/req, "
    f"among ranked cells only, and only where it is certainly best - beyond any bound and the "
    f"repeats' min-max. {DIRTY} = more than "
    f"{100 * analysis.DIRTY_SHARE:g} % of the cell's outcomes "
    f"were non-2xx answers or errors (the non-2xx + errors row; codes in the note under the table): "
    f"never bold, never ranked. {CONTENDED} = contended: other processes used more than "
    f"{{contended}} % of the machine's CPU during the window even after re-runs: never bold, never "
    f"ranked. {STARVED} = under-driven: the closed loop held fewer than "
    f"{analysis.UNDERDRIVEN_FRACTION:g} x C requests in flight (req/s x mean latency) because "
    f"connections were lost to errors or reconnects, so the server saw less than the column's C and the "
    f"latency is never bold. {GENERATOR_BOUND} = generator-bound: loadbench's own threads were "
    f"saturated, or (connection setup) its CPU per new connection or handshake exceeded the "
    f"server's, so the cell's req/s and connection rate are the generator's limit and the server's "
    f'own is at least that: a lower bound, written "≥ N", ranked as one (bold only when even the bound '
    f"beats every other server's value). Its latency percentiles are the generator's, never bold; its CPU "
    f"us/req and peak memory are the server's own at the load it got, ranked as measured. "
    f"Who limited a cell is decided from both sides' CPU: a server that kept at least 90 % of "
    f"its cores busy is the limit whatever the generator did, so such a cell is the server's "
    f'figure (no {GENERATOR_BOUND}); a bound carries the server\'s CPU ceiling, "(≤ N by CPU)", '
    f"cores / CPU per response. {POOL_BOUND} = pool-bound (open loop): sends waited for a free "
    f"connection while the server had CPU to spare, so the latency is the pool's queue, never "
    f"ranked. {NOT_STEADY} = not steady: the repeats only climbed, each above the one before and "
    f"the last at least {analysis.NOT_STEADY_CLIMB:g}x the first (a JIT or a cache still warming): "
    f"never bold, never ranked. {RECONNECTING} = reconnecting: the generator opened a new connection "
    f"for more than {100 * RECONNECT_SHARE:g} % of the responses because the server closed its "
    f"kept-alive connections, so the figures include connection setup and the in-flight count can "
    f"read above C: marked, still ranked (closing connections is the server's own behaviour). "
    f"{RSS_GROWING} = memory growing: the server's RSS rose by more than "
    f"{100 * RSS_GROWTH:g} % from its first to its last cell in one process, so its peak RSS is "
    f"growth over the sweep, not a footprint (shown as first -> last under the memory figures). "
    f"{PARTIAL} = some repeats failed, the value is the median of the others. "
    f"FAIL = the server died or never became ready for that cell; n/a = not run (peer not "
    f"installed, or the peer does not serve that protocol/workload).)"
)


# Every number formatter writes a Figure's bound before it ("≥ 193 883"): the one place where a
# lower bound becomes visible, so no table can show one as a measured value.
def prefix(value: Optional[float]) -> str:
    return getattr(value, "prefix", "")


def fmt_number(value: Optional[float], digits: int = 0, missing: str = "n/a") -> str:
    """39 999 / 1 234.57 - thousands separated by a space, ``digits`` decimals; ``missing`` for
    None. A lower bound the server's CPU ceiling closes says so: '≥ 101 202 (≤ 119 012 by CPU)'."""
    if value is None:
        return missing
    text = prefix(value) + f"{value:,.{digits}f}".replace(",", " ")
    ceiling = getattr(value, "ceiling", None)
    if ceiling is not None:
        text += f" (≤ {ceiling:,.{digits}f} by CPU)".replace(",", " ")
    return text


def fmt_noise(value: Optional[float]) -> str:
    """'±13 %': half the replications' 95 % interval as a share of the figure; '' for one
    run or none."""
    share = analysis.noise_share(value) if value is not None else 0.0
    if not share:
        return ""
    return f"±{100 * share:.0f} %" if share >= 0.01 else f"±{100 * share:.1f} %"


def fmt_int(value: Optional[float]) -> str:
    """39 999 - thousands separated by a space, like the seed report."""
    return fmt_number(value, 0, "")


def fmt_ms(value: Optional[float]) -> str:
    if value is None:
        return ""
    return prefix(value) + (f"{value:.2f}" if value >= 0.1 else f"{value:.3f}")


def fmt_us(value: Optional[float]) -> str:
    return "" if value is None else prefix(value) + f"{value:.2f}"


def fmt_ratio(value: Optional[float]) -> str:
    """'1.32x', '≥ 6.10x'; a ratio of two bounds in the same direction bounds nothing."""
    return _fmt_quotient(value, lambda v: f"{v:.2f}x")


def fmt_percent(value: Optional[float]) -> str:
    """A ratio as a percentage: '31.0 %', '≥ 24.0 %'; of two bounds in one direction, uncertain."""
    return _fmt_quotient(value, lambda v: f"{100 * v:.1f} %")


def _fmt_quotient(value: Optional[float], fmt: Callable[[float], str]) -> str:
    if value is None:
        return "n/a"
    if getattr(value, "bound", None) == "unknown":
        return f"uncertain (~{fmt(value)} of two bounds)"
    return prefix(value) + fmt(value)


def fmt_average(
    value: Optional[float], fmt: Callable[[Optional[float]], str], of: Optional[int] = None
) -> str:
    """An average with how many of its cells were bounds and, when it covers fewer than the
    ``of`` cells its scope has, how many it covers: '≥ 150 003 (5 of 9 §)', '84 210 (2 of 3
    cells)'."""
    text = fmt(value)
    notes = []
    ceiling = text.rfind(" (≤ ")
    if text.endswith(" by CPU)") and ceiling > 0:  # one pair of brackets for every note
        text, notes = text[:ceiling], [text[ceiling + 2 : -1]]
    if text and getattr(value, "bounded", 0):
        notes.append(f"{value.bounded} of {value.cells} {GENERATOR_BOUND}")
    cells = getattr(value, "cells", None)
    if text and of and cells and cells < of:
        notes.append(f"{cells} of {of} cells")
    return text + (f" ({'; '.join(notes)})" if notes else "")


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A markdown table; every cell is written with str()."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def bold_best(cells: Sequence[Optional[float]], lowest: bool, digits: int) -> list[str]:
    """A row or column of plain numbers (:func:`fmt_number`), the best one (lowest or highest)
    in bold when there are two or more to choose from."""
    present = [c for c in cells if c is not None]
    best = (min(present) if lowest else max(present)) if present else None
    out = []
    for cell in cells:
        text = fmt_number(cell, digits)
        out.append(
            f"**{text}**" if cell is not None and cell == best and len(present) > 1 else text
        )
    return out


def best_table(header: Sequence[str], rows: list[list], lowest: Any, digits: Any) -> str:
    """rows = [[name, value, ...]]: a table with each column's best value in bold (:func:`bold_best`).
    lowest / digits: one for every column, or a list with one per column."""
    n = len(header) - 1
    pick = lambda x, i: x[i] if isinstance(x, (list, tuple)) else x  # noqa: E731
    columns = [
        bold_best([row[i + 1] for row in rows], pick(lowest, i), pick(digits, i)) for i in range(n)
    ]
    return table(
        header, [[row[0]] + [columns[i][j] for i in range(n)] for j, row in enumerate(rows)]
    )


class _Metric:
    """One row of a table. ``rank``: the model metric whose ranking decides bold (a
    generator-bound cell is ranked for CPU us/req, not for req/s or latency)."""

    def __init__(
        self,
        label: str,
        get: Callable[[Aggregate], Optional[float]],
        fmt: Callable,
        higher_is_better: Optional[bool],
        latency: bool,
        rank: str = "rps",
        attr: Optional[str] = None,
        na: Optional[Callable[[Aggregate], Optional[str]]] = None,
    ) -> None:
        self.label, self.get, self.fmt = label, get, fmt
        self.higher_is_better, self.latency, self.rank = higher_is_better, latency, rank
        # the Aggregate attribute whose Figure (bound, ceiling, the repeats' range) the row shows
        self.attr = attr
        # why a measured cell has no value for the row (shown as "n/a °", the reason under it)
        self.na = na


def _median(spread: Optional[analysis.Spread]) -> Optional[float]:
    return None if spread is None else spread.median


def fmt_share(value: Optional[float]) -> str:
    if value is None:
        return ""
    return (
        "0 %" if value == 0 else f"{100 * value:.2f} %" if value < 0.1 else f"{100 * value:.1f} %"
    )


BAD = _Metric("non-2xx + errors", lambda a: a.bad_share, fmt_share, None, False)
METRICS = [
    _Metric("req/s", lambda a: _median(a.rps), fmt_int, True, False, attr="rps"),
    _Metric("p50 (ms)", lambda a: _median(a.p50_ms), fmt_ms, False, True, "p50_ms", "p50_ms"),
    _Metric("p99 (ms)", lambda a: _median(a.p99_ms), fmt_ms, False, True, "p99_ms", "p99_ms"),
    _Metric("CPU us/req", lambda a: _median(a.cpu_us), fmt_us, False, False, "cpu_us", "cpu_us"),
    _Metric(
        "in-flight",
        lambda a: _median(a.inflight),
        lambda v: "" if v is None else f"{v:.1f}",
        None,
        False,
    ),
    BAD,
]


def fmt_count(value: Optional[float]) -> str:
    """Allocations per response: '0', '0.0006', '5.01', '1 203'."""
    if value is None:
        return ""
    if value == 0 or value >= 100:
        return fmt_int(value)
    return f"{value:.2f}" if value >= 0.01 else f"{value:.4f}"


# Rows of a sweep that counted heap allocations (allocations = true), after CPU us/req: ranked
# like it (lowest first; the server's own cost, so a generator-bound cell still ranks).
ALLOCATION_METRICS = [
    _Metric(
        "allocs/req", lambda a: _median(a.allocs_per_req), fmt_count, False, False, "allocs_per_req"
    ),
    _Metric(
        "bytes allocated/req",
        lambda a: _median(a.alloc_bytes_per_req),
        fmt_count,
        False,
        False,
        "alloc_bytes_per_req",
    ),
]


# Rows of cells whose sampler counted the kernel's side (on by default), after CPU us/req and
# the allocation rows: ranked like CPU us/req (lowest first, the server's own cost); "n/a °"
# with the kernel's reason under the table where it refused to count system calls.
NA_MARK = "°"  # † is taken: PARTIAL
KERNEL_METRICS = [
    _Metric(
        "syscalls/req",
        lambda a: _median(a.syscalls_per_req),
        fmt_count,
        False,
        False,
        "syscalls_per_req",
        "syscalls_per_req",
        na=lambda a: a.syscalls_na,
    ),
    _Metric(
        "ctx switches/req",
        lambda a: _median(a.ctx_switches_per_req),
        fmt_count,
        False,
        False,
        "ctx_switches_per_req",
        "ctx_switches_per_req",
    ),
]


def metrics_of(aggs: Iterable[Aggregate]) -> list[_Metric]:
    """The rows of a load table: METRICS, with the allocation rows when the cells counted them
    and the system-call and context-switch rows when their results carry them."""
    aggs = list(aggs)
    at = METRICS.index(next(m for m in METRICS if m.rank == "cpu_us")) + 1
    extra = ALLOCATION_METRICS if any(a.allocations_counted for a in aggs) else []
    extra = extra + (KERNEL_METRICS if any(a.kernel_counted for a in aggs) else [])
    return METRICS[:at] + extra + METRICS[at:]


def na_note(cells: list[Optional[Aggregate]]) -> str:
    """The footnote under a table whose rows show "n/a °": each reason once, with its servers."""
    reasons: dict[str, list[str]] = {}
    for metric in KERNEL_METRICS:
        for a in cells:
            if a is None or a.status != "ok" or metric.na is None or metric.get(a) is not None:
                continue
            reason = metric.na(a)
            if reason:
                names = reasons.setdefault(f"{metric.label} n/a: {reason}", [])
                if a.target not in names:
                    names.append(a.target)
    return "".join(f"\n\n{NA_MARK} {text} ({', '.join(names)})." for text, names in reasons.items())


def _cell_value(agg: Aggregate, metric: _Metric) -> Optional[float]:
    """The cell's value for a row, as a Figure carrying its bound (and, for a row with an
    ``attr``, the CPU ceiling and the repeats' range) for the rows that rank."""
    if metric.attr and metric.higher_is_better is not None:
        return agg.figure(metric.attr)
    value = metric.get(agg)
    bound = agg.bound_for(metric.rank) if metric.higher_is_better is not None else None
    return analysis.Figure(value, bound, 1) if value is not None and bound else value


def cell_text(agg: Optional[Aggregate], metric: _Metric, bold: bool) -> str:
    """One table cell: value ("≥ N" when a lower bound), bold when certainly best, with its
    marks; FAIL / n/a when not measured."""
    if agg is None or agg.status == "skipped":
        return "n/a"
    if agg.status == "fail":
        return "FAIL"
    value = _cell_value(agg, metric)
    if value is None:
        return f"n/a {NA_MARK}" if metric.na is not None and metric.na(agg) else "n/a"
    text = metric.fmt(value)
    if bold:
        text = f"**{text}**"
    if agg.dirty:
        text += f" {DIRTY}"
    if agg.contended:
        text += f" {CONTENDED}"
    if agg.starved and (metric.latency or metric is METRICS[-2]):
        text += f" {STARVED}"
    if agg.not_steady:
        text += f" {NOT_STEADY}"
    if agg.reconnecting:
        text += f" {RECONNECTING}"
    if agg.bounded_by_generator:
        text += f" {agg.mark}"
    if agg.failed:
        text += f" {PARTIAL}"
    return text


def best_target(aggs: dict[str, Optional[Aggregate]], metric: _Metric) -> Optional[str]:
    """The bold cell of one column: the one certainly best among the cells ranked for the row's
    metric (clean, uncontended; for latency, not under-driven), a lower bound counting as what it
    proves. None when no cell is certainly best (e.g. two lower bounds, or a lower bound below
    another server's measured value)."""
    if metric.higher_is_better is None:
        return None
    values = {}
    for name, agg in aggs.items():
        if (
            agg is None
            or agg.status != "ok"
            or not agg.ranked_for(metric.rank)
            or (metric.latency and agg.starved)
        ):
            continue
        values[name] = _cell_value(agg, metric)
    measured = sum(
        1 for a in aggs.values() if a is not None and a.status == "ok" and metric.get(a) is not None
    )
    if measured < 2:
        return None  # a single server is nobody's winner
    ranks = analysis.certain_ranks(values, higher_is_better=metric.higher_is_better)
    return next((name for name, r in ranks.items() if r.worst == 1), None)


def _load_name(a: Aggregate) -> str:
    return {
        "closed": f"C = {a.load}",
        "connect": f"new-conn c = {a.load}",
        "open": f"open loop {a.load} %",
    }.get(a.mode, str(a.load))


def outcome_note(cells: list[Optional[Aggregate]]) -> str:
    """The footnote under a table: the top non-2xx codes / error kinds of its cells that had any."""
    parts = [
        f"{a.target} {a.protocol} {a.workload} {_load_name(a)}: {a.top_outcomes()}"
        for a in cells
        if a is not None and a.status == "ok" and a.top_outcomes()
    ]
    if not parts:
        return ""
    return (
        "\n\nNon-2xx answers and errors (top kinds, summed over repeats): " + "; ".join(parts) + "."
    )
