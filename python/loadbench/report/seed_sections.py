"""The sections of report.md in seed report 001's shapes: the overall ranking, HTTP/1.1 vs
HTTP/2 (cleartext and TLS) with the H2/H1 peak ratio, the workload breakdown as peak and mean
per protocol, mean latency by protocol, and the speedup between two configurations of one
server (``variant_of``). Every number is a :class:`loadbench.model.Model` method; this module
only lays them out.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Optional

from ..core import protocols
from .markdown import (
    GENERATOR_BOUND,
    fmt_average,
    fmt_int,
    fmt_ms,
    fmt_noise,
    fmt_ratio,
    fmt_us,
    table,
)
from .model import Model
from .tables import by_rank, peak_ratio

# The (server, reason) pairs a note under an earlier table of this report said in full:
# sections() opens the set, and a later table names the server and protocols only (issue 58:
# puma's falcon sentence came 8 times in one report). A table laid out on its own says all.
_SAID: ContextVar[Optional[set]] = ContextVar("seed_sections_said", default=None)


class _Gaps:
    """Collects why a table shows n/a, to print the reasons under it (never silently absent)."""

    def __init__(self, model: Model) -> None:
        self.model, self.notes, self.excluded = model, {}, {}

    def text(
        self,
        target: str,
        protocol,
        value: Optional[float],
        fmt=fmt_int,
        workload: Optional[str] = None,
        average: bool = False,
    ) -> str:
        if value is not None:
            if not average:
                return fmt(value)
            return fmt_average(value, fmt, len(self.model.scope(protocol, workload)))
        cells = self.model.cells(target, protocol, workload, mode=None)
        gap = self.model.gap(cells)
        if gap.startswith("excluded: "):  # why, once under the table rather than in every cell
            where = " ".join(x for x in (target, _protocols_text(protocol), workload) if x)
            self.excluded[where] = gap[len("excluded: ") :]
            return "excluded"
        if gap == "n/a":
            for p in sorted(
                {a.protocol for a in cells} or ([protocol] if isinstance(protocol, str) else [])
            ):
                reason = (
                    next(
                        (
                            a.note
                            for a in cells
                            if a.protocol == p and a.status == "skipped" and a.note
                        ),
                        None,
                    )
                    if workload
                    else self.model.unserved(target, p)
                )
                if reason:
                    self.notes[(target, p)] = reason
        return gap

    def note(self) -> str:
        out = ""
        if self.excluded:
            out += (
                "\n\nexcluded: "
                + "; ".join(f"{where}: {why}" for where, why in self.excluded.items())
                + "."
            )
        if self.notes:
            protocols_of: dict = {}  # one entry per server and reason, its protocols joined
            for (t, p), why in self.notes.items():
                protocols_of.setdefault((t, why), []).append(p)
            said = _SAID.get()
            full, above = [], []
            for (t, why), ps in protocols_of.items():
                where = f"{t} {'/'.join(ps)}"
                if said is not None and (t, why) in said:
                    above.append(where)
                    continue
                full.append(f"{where}: {why}")
                if said is not None:
                    said.add((t, why))
            if above:
                full.append(f"{', '.join(above)}: as given above")
            out += "\n\nn/a: " + "; ".join(full) + "."
        return out


def _protocols_text(protocol) -> str:
    """'h2', 'h2c/h2' or '' (every protocol) for a note under a table."""
    if protocol is None:
        return ""
    return protocol if isinstance(protocol, str) else "/".join(protocol)


def ranking_table(model: Model) -> str:
    """Rank, peak req/s, average req/s, mean latency, peak RSS (seed 001 section 2). The rank is
    the certain place by peak req/s (a range where a lower bound leaves the order open)."""
    gaps = _Gaps(model)
    header = [
        "Rank",
        "Server",
        "Peak req/s",
        "Average req/s",
        "Mean latency (ms)",
        "Peak RSS (MiB)",
    ]
    peaks = {t: model.peak(t) for t in model.listed}
    ranks = model.peak_ranks()
    rows = []
    for t in by_rank(model.listed, peaks, ranks):
        rss = model.rss(t)
        rows.append(
            [
                ranks[t].text() if t in ranks else "not ranked",
                t,
                gaps.text(t, None, peaks[t]),
                gaps.text(t, None, model.average(t), average=True),
                gaps.text(t, None, model.mean_latency(t), fmt_ms, average=True),
                "n/a" if rss is None else f"{rss:.1f}",
            ]
        )
    note = ""
    if any(getattr(v, "bound", None) for v in peaks.values()):
        note = (
            f"\n\n≥: a lower bound - some of the server's cells were generator-bound ({GENERATOR_BOUND}), so it "
            "did at least this; ≤ (mean latency): an upper bound from the same cells (Little's law); "
            f"(k of n {GENERATOR_BOUND}): k of the n averaged cells were such bounds."
        )
    return table(header, rows) + note + gaps.note()


def protocol_ranking_table(model: Model, protocol: str, base: str) -> str:
    """One protocol's servers by peak req/s (like with like): the certain place, the peak with
    its repeats' noise (±) and CPU ceiling, the baseline's peak over it, its peak over the next
    server's (the summary's chain, step by step), the average over the
    server's cells, mean and p99 latency (means over the same cells) and the best CPU us/req."""
    gaps = _Gaps(model)
    peaks = {t: model.peak(t, protocol) for t in model.listed}
    ranks = model.peak_ranks(protocol)
    header = [
        "Rank",
        "Server",
        "Peak req/s",
        "Noise (repeats)",
        f"{base} ÷ this",
        "This ÷ next",
        "Average req/s",
        "Mean latency (ms)",
        "p99 latency (ms)",
        "Best CPU us/req",
    ]
    rows = []
    order = by_rank(model.listed, peaks, ranks)
    ranked = [t for t in order if peaks[t] is not None]
    # each server's peak over the next one's: the step the summary's chain writes after it
    following = dict(zip(ranked, ranked[1:]))
    for t in order:
        if peaks[t] is None:
            gaps.text(t, protocol, None)  # why it has no figure, under the table
            continue
        rows.append(
            [
                ranks[t].text(),
                t,
                fmt_int(peaks[t]),
                fmt_noise(peaks[t]),
                fmt_ratio(peak_ratio(peaks, base, t)) if peaks.get(base) is not None else "n/a",
                fmt_ratio(peak_ratio(peaks, t, following[t])) if t in following else "",
                gaps.text(t, protocol, model.average(t, protocol), average=True),
                gaps.text(t, protocol, model.mean_latency(t, protocol), fmt_ms, average=True),
                gaps.text(
                    t, protocol, model.mean_latency(t, protocol, "p99_ms"), fmt_ms, average=True
                ),
                gaps.text(t, protocol, model.best_cpu(t, protocol), fmt_us),
            ]
        )
    return table(header, rows) + gaps.note()


def protocol_table(model: Model, http1: str, http2: str) -> str:
    """HTTP/1.1 peak and mean, HTTP/2 peak and mean, H2/H1 peak ratio per server (seed 001 section 3)."""
    gaps = _Gaps(model)
    header = [
        "Server",
        f"{protocols.get(http1).short} peak (req/s)",
        f"{protocols.get(http1).short} mean (req/s)",
        f"{protocols.get(http2).short} peak (req/s)",
        f"{protocols.get(http2).short} mean (req/s)",
        "H2 / H1 peak ratio",
    ]
    rows = []
    for t in model.listed:
        rows.append(
            [
                t,
                gaps.text(t, http1, model.peak(t, http1)),
                gaps.text(t, http1, model.average(t, http1), average=True),
                gaps.text(t, http2, model.peak(t, http2)),
                gaps.text(t, http2, model.average(t, http2), average=True),
                fmt_ratio(model.h2_h1_ratio(t, http1, http2)),
            ]
        )
    return table(header, rows) + gaps.note()


def h3_table(model: Model) -> str:
    """HTTP/2 over TLS and HTTP/3 peak and mean, the H3/H2 peak ratio, and CPU us/req per TLS
    protocol the sweep measured (https, h2, h3), per server: issue 33's comparison."""
    gaps = _Gaps(model)
    cpu_protocols = [p for p in protocols.TLS if p in model.protocols]
    header = [
        "Server",
        f"{protocols.get('h2').short} peak (req/s)",
        f"{protocols.get('h2').short} mean (req/s)",
        f"{protocols.get('h3').short} peak (req/s)",
        f"{protocols.get('h3').short} mean (req/s)",
        "H3 / H2 peak ratio",
    ] + [f"{protocols.get(p).short} CPU us/req" for p in cpu_protocols]
    rows = []
    for t in model.listed:
        row = [
            t,
            gaps.text(t, "h2", model.peak(t, "h2")),
            gaps.text(t, "h2", model.average(t, "h2"), average=True),
            gaps.text(t, "h3", model.peak(t, "h3")),
            gaps.text(t, "h3", model.average(t, "h3"), average=True),
            fmt_ratio(model.h3_h2_ratio(t)),
        ]
        for p in cpu_protocols:
            row.append(gaps.text(t, p, model.best_cpu(t, p), fmt_us))
        rows.append(row)
    return table(header, rows) + gaps.note()


def workload_peak_mean_table(model: Model, protocol: str, workloads: list[str]) -> str:
    """Per workload: peak and mean req/s of each server over one protocol (seed 001 section 4)."""
    gaps = _Gaps(model)
    header = ["Server"] + [f"{w} {kind} (req/s)" for w in workloads for kind in ("peak", "mean")]
    rows = []
    for t in model.listed:
        row = [t]
        for w in workloads:
            row += [
                gaps.text(t, protocol, model.peak(t, protocol, w), workload=w),
                gaps.text(
                    t, protocol, model.average(t, protocol, workload=w), workload=w, average=True
                ),
            ]
        rows.append(row)
    return table(header, rows) + gaps.note()


def latency_table(model: Model) -> str:
    """Mean latency by protocol family and overall, lowest overall first (seed 001 section 6)."""
    gaps = _Gaps(model)
    families = [
        (name, ps) for name, ps in protocols.families() if any(p in model.protocols for p in ps)
    ]
    header = (
        ["Server"]
        + [f"{name} mean latency (ms)" for name, _ in families]
        + ["Overall mean latency (ms)"]
    )
    overall = {t: model.mean_latency(t) for t in model.listed}
    order = sorted(model.listed, key=lambda t: (overall[t] is None, overall[t] or 0.0))
    rows = []
    for t in order:
        rows.append(
            [t]
            + [
                gaps.text(t, ps, model.mean_latency(t, ps), fmt_ms, average=True)
                for _, ps in families
            ]
            + [gaps.text(t, None, overall[t], fmt_ms, average=True)]
        )
    return table(header, rows) + gaps.note()


def variant_table(model: Model, base: str, variant: str) -> str:
    """Per protocol and workload: the peak of each configuration and the speedup (seed 001 section 5)."""
    header = [
        "Workload & protocol",
        f"{base} peak (req/s)",
        f"{variant} peak (req/s)",
        f"Speedup ({variant} / {base})",
    ]
    rows = []
    for p in model.protocols:
        for w in model.workloads:
            a, b = model.peak(base, p, w), model.peak(variant, p, w)
            if a is None and b is None:
                continue
            rows.append(
                [
                    f"{protocols.get(p).short} {w}",
                    fmt_int(a) or "n/a",
                    fmt_int(b) or "n/a",
                    fmt_ratio(model.speedup(base, variant, p, w)),
                ]
            )
    rows.append(
        [
            "Overall mean",
            fmt_average(model.average(base), fmt_int, len(model.scope())) or "n/a",
            fmt_average(model.average(variant), fmt_int, len(model.scope())) or "n/a",
            fmt_ratio(model.speedup(base, variant, kind="average")),
        ]
    )
    rows.append(
        [
            "Overall peak",
            fmt_int(model.peak(base)) or "n/a",
            fmt_int(model.peak(variant)) or "n/a",
            fmt_ratio(model.speedup(base, variant)),
        ]
    )
    return table(header, rows)


def sections(model: Model, streams: dict[str, int], base: Optional[str] = None) -> list[str]:
    """The seed-001 sections, in its order, as markdown lines; each n/a reason said in full
    once, under the first table that needs it."""
    token = _SAID.set(set())
    try:
        return _sections(model, streams, base)
    finally:
        _SAID.reset(token)


def _sections(model: Model, streams: dict[str, int], base: Optional[str] = None) -> list[str]:
    h2 = [p for p in protocols.names(family="HTTP/2") if p in model.protocols]
    how = ", ".join(f"{p}: {streams.get(p, 1)} concurrent streams per connection" for p in h2)
    base = base or (model.listed[0] if model.listed else None)
    parts = ["## Ranking per protocol", ""]
    parts += [
        "Each protocol on its own, like with like: a server's peak is its best ranked closed-loop "
        "cell of that protocol (any workload). The rank is certain only beyond the repeats' noise "
        "and any bound; the noise column is half the repeats' min-max range over the median, so two "
        "peaks whose ranges overlap share a range of places. Average, mean and p99 latency: means "
        "over the server's own ranked cells of the protocol ((k of n cells) where it has fewer "
        "than the protocol's n); two servers' averages are compared over the cells both have.",
        "",
    ]
    for p in model.protocols:
        if base is None:
            break
        parts += [
            f"### {protocols.get(p).short} ({p})",
            "",
            protocol_ranking_table(model, p, base),
            "",
        ]
    parts += [
        "## Overall ranking",
        "",
        "Peak: the best ranked closed-loop cell of each server over every protocol and workload - "
        "each server at its best protocol, so read the per-protocol tables above to compare like "
        "with like. Average and mean latency: over the server's own ranked closed-loop cells ((k of "
        "n cells) where it has fewer than the sweep's n: protocols or workloads it does not serve, "
        "or cells left out).",
        "",
        ranking_table(model),
        "",
    ]
    pairs = model.pairs()
    if pairs and h2:
        parts += [
            "## Protocol comparison: HTTP/1.1 vs HTTP/2",
            "",
            f"The same connections C in both columns; HTTP/2 multiplexes requests on them ({how}), "
            "HTTP/1.1 has one request in flight per connection. Peak: the best ranked cell of that protocol; "
            "mean: over the server's ranked cells of that protocol. The ratio divides the "
            "HTTP/2 peak by the HTTP/1.1 peak of the same server.",
            "",
        ]
        for label, h1p, h2p in pairs:
            parts += [
                f"### {'Cleartext' if label == 'cleartext' else 'TLS'}: {h1p} vs {h2p}",
                "",
                protocol_table(model, h1p, h2p),
                "",
            ]
    if "h3" in model.protocols:
        h3_how = f"{streams.get('h3', 1)} concurrent streams per connection"
        parts += [
            "## Protocol comparison: HTTP/2 vs HTTP/3",
            "",
            f"HTTP/3 (QUIC over UDP, {h3_how}) against HTTP/2 over TLS on TCP, the same "
            "connections C. Peak and mean as above; the ratio divides the HTTP/3 peak by the "
            "HTTP/2 (TLS) peak of the same server. CPU us/req: the server's own CPU per response "
            "in its cheapest ranked closed-loop cell of that protocol.",
            "",
            h3_table(model),
            "",
        ]
    workloads = [w for w in model.workloads if model.cells(workload=w)]
    if len(workloads) > 1:
        parts += ["## Workload breakdown by protocol: peak and mean", ""]
        for p in model.protocols:
            parts += [
                f"### {protocols.get(p).short} ({p})",
                "",
                workload_peak_mean_table(model, p, workloads),
                "",
            ]
    parts += [
        "## Mean latency by protocol (lower is better)",
        "",
        "Mean of each cell's median mean latency over the same cells as the averages; a closed loop's latency "
        "grows with C (and with the streams per HTTP/2 connection), so compare servers within a column. "
        "Overall: over every protocol's cells the server has.",
        "",
        latency_table(model),
        "",
    ]
    for base, variant in model.variants():
        parts += [
            f"## Variant speedup: {variant} vs {base}",
            "",
            f"{variant} is another configuration of {base} (its `variant_of`). Peaks per protocol and "
            "workload; the overall rows compare the average over the shared cells and the overall peak.",
            "",
            variant_table(model, base, variant),
            "",
        ]
    return parts
