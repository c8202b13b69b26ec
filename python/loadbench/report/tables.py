"""The tables of report.md that show cells and servers: per protocol and workload (req/s, p50,
p99, CPU us/req, in-flight, non-2xx + errors by server x concurrency), connection setup, open
loop, the workload breakdown, and the summary with its peaks, averages, certain ranks and the
headline a sweep prints. Every figure is a :class:`loadbench.report.model.Model` method or an
:class:`Aggregate`'s median.
"""

from __future__ import annotations

from typing import Optional

from ..core import analysis, protocols
from .markdown import (
    BAD,
    CONTENDED,
    GENERATOR_BOUND,
    METRICS,
    PARTIAL,
    _load_name,
    _median,
    _Metric,
    best_target,
    cell_text,
    fmt_average,
    fmt_int,
    fmt_ms,
    fmt_noise,
    fmt_percent,
    fmt_ratio,
    fmt_us,
    metrics_of,
    na_note,
    outcome_note,
    table,
)
from .model import BOUNDED_METRICS, SERVER_COST_METRICS, Aggregate, Model


def load_table(
    aggs: dict[tuple, Aggregate], targets: list[str], protocol: str, workload: str
) -> str:
    """req/s, p50, p99, CPU us/req, in-flight and non-2xx + errors by server x concurrency (closed loop)."""
    concurrencies = sorted(
        {k[4] for k in aggs if k[1] == protocol and k[2] == workload and k[3] == "closed"}
    )
    header = ["Metric", "Server"] + [f"C = {c}" for c in concurrencies]
    rows = []
    # a server with no cell here at all (the sweep never asked it) gets no row of n/a
    targets = [
        t
        for t in targets
        if any((t, protocol, workload, "closed", c) in aggs for c in concurrencies)
    ]
    cells = [aggs.get((t, protocol, workload, "closed", c)) for t in targets for c in concurrencies]
    for metric in metrics_of(a for a in cells if a is not None):
        best = {
            c: best_target(
                {t: aggs.get((t, protocol, workload, "closed", c)) for t in targets}, metric
            )
            for c in concurrencies
        }
        for i, t in enumerate(targets):
            row = [metric.label if i == 0 else "", t]
            for c in concurrencies:
                row.append(
                    cell_text(aggs.get((t, protocol, workload, "closed", c)), metric, best[c] == t)
                )
            rows.append(row)
    return table(header, rows) + outcome_note(cells) + na_note(cells)


def _setup_cpu_text(a: Optional[Aggregate]) -> str:
    """'544 / 257 §': the generator's and the server's CPU us per new connection or handshake
    (medians), § when the generator's is the larger (the cell measured the generator)."""
    if a is None or a.status != "ok":
        return "n/a"
    gen, srv = _median(a.generator_cpu_us_per_conn), _median(a.server_cpu_us_per_conn)
    if gen is None and srv is None:
        return "n/a"
    text = f"{'' if gen is None else f'{gen:.0f}'} / {'' if srv is None else f'{srv:.0f}'}"
    return text + (f" {GENERATOR_BOUND}" if a.setup_generator_bound else "")


def connection_table(aggs: dict[tuple, Aggregate], targets: list[str]) -> str:
    """Connections (cleartext) or full TLS handshakes (https, h2) per second, one column per
    protocol that has connection-setup cells, the generator's and the server's CPU per new
    connection (or handshake), then their non-2xx + errors."""
    shown = [p for p in protocols.NAMES if any(k[1] == p and k[3] == "connect" for k in aggs)] or [
        "http",
        "https",
    ]
    tls = protocols.TLS  # h3: a QUIC handshake carries the TLS one
    header = (
        ["Server"]
        + [f"{p} handshakes/s" if p in tls else f"{p} conn/s" for p in shown]
        + [f"{p} CPU us/{'handshake' if p in tls else 'conn'} (generator / server)" for p in shown]
        + [f"{p} non-2xx + errors" for p in shown]
    )
    metric = _Metric("", lambda a: _median(a.conn_per_s), fmt_int, True, False, attr="conn_per_s")
    keys = {p: [k for k in aggs if k[1] == p and k[3] == "connect"] for p in shown}
    best = {}
    for p, ks in keys.items():
        best[p] = best_target({k[0]: aggs[k] for k in ks}, metric)
    rows = []
    for t in targets:
        row, cpu, bad = [t], [], []
        for p in shown:
            match = [k for k in keys[p] if k[0] == t]
            row.append(cell_text(aggs[match[0]], metric, best[p] == t) if match else "n/a")
            cpu.append(_setup_cpu_text(aggs[match[0]]) if match else "n/a")
            bad.append(cell_text(aggs[match[0]], BAD, False) if match else "n/a")
        rows.append(row + cpu + bad)
    note = ""
    if any(aggs[k].setup_generator_bound for ks in keys.values() for k in ks):
        note = (
            f"\n\n{GENERATOR_BOUND} in a connection-setup cell: the generator spent more CPU per new "
            f"connection (or TLS handshake) than the server, so with a core each the generator ran out "
            f"first and the rate is the generator's limit: the server's own rate is at least the figure (\"≥\"), "
            f"bold only where even that beats every other server's rate."
        )
    return table(header, rows) + note + outcome_note([aggs[k] for ks in keys.values() for k in ks])


def open_loop_table(aggs: dict[tuple, Aggregate], targets: list[str]) -> str:
    """Open-loop cells: corrected latency percentiles per server, protocol and rate."""
    header = [
        "Server",
        "Protocol",
        "Load",
        "Target req/s",
        "Achieved req/s",
        "p50 (ms)",
        "p99 (ms)",
        "p99.9 (ms)",
        "max (ms)",
        "p99 uncorrected (ms)",
        "non-2xx + errors",
    ]
    rows, cells = [], []
    for t in targets:
        for k in sorted(
            (k for k in aggs if k[0] == t and k[3] == "open"), key=lambda k: (k[1], k[4])
        ):
            a = aggs[k]
            cells.append(a)
            load = f"{a.load_pct} % of capacity"
            if a.status != "ok":
                rows.append([t, k[1], load] + ["FAIL" if a.status == "fail" else "n/a"] * 8)
                continue
            mark = (f" {PARTIAL}" if a.failed else "") + (f" {CONTENDED}" if a.contended else "")
            rows.append(
                [
                    t,
                    k[1],
                    load,
                    fmt_int(_median(a.target_rate)),
                    fmt_int(_median(a.rps)) + mark,
                    fmt_ms(_median(a.p50_ms)),
                    fmt_ms(_median(a.p99_ms)),
                    fmt_ms(_median(a.p999_ms)),
                    fmt_ms(_median(a.max_ms)),
                    fmt_ms(_median(a.p99_uncorrected_ms)),
                    cell_text(a, BAD, False),
                ]
            )
    return table(header, rows) + outcome_note(cells)


def summary_table(model: Model, baseline: str) -> str:
    """Peak and average throughput, best and average CPU, memory per server, each over the cells
    ranked for that metric (a generator-bound cell's req/s as the lower bound it is: "≥"), with
    the ratio to the baseline, the cells left out and the lower bounds, and two rank orders - by
    peak req/s (certain places only: a range where a lower bound leaves the order open), and by
    best CPU us/req (lowest first)."""
    targets = model.listed
    peak = {t: model.peak(t) for t in targets}
    best_cpu = {t: model.best_cpu(t) for t in targets}
    header = [
        "Server",
        "Peak req/s",
        "Peak, % of the leader's",
        f"Peak: {baseline} ÷ this",
        "Average req/s",
        "Best CPU us/req",
        "Average CPU us/req",
        "Peak RSS (MiB)",
        f"Peak RSS: this ÷ {baseline}",
        f"Cells left out (req/s / CPU) / lower bounds {GENERATOR_BOUND}",
        "Rank by peak req/s",
        "Rank by best CPU us/req",
    ]
    order = model.peak_ranks()
    cpu_order = model.ranks(best_cpu, higher_is_better=False)
    # the leader by peak: the highest figure (a certain rank never contradicts that order)
    leader = max(
        (t for t in targets if peak[t] is not None), key=lambda t: float(peak[t]), default=None
    )
    rows = []
    for t in targets:
        avg, cpu, rss = model.average(t), model.average(t, metric="cpu_us"), model.rss(t)
        rows.append(
            [
                t,
                fmt_int(peak[t]) or "n/a",
                fmt_percent(peak_ratio(peak, t, leader) if leader else None),
                fmt_ratio(peak_ratio(peak, baseline, t)),
                fmt_average(avg, fmt_int, len(model.scope())) or "n/a",
                fmt_us(best_cpu[t]) or "n/a",
                fmt_us(cpu) or "n/a",
                "n/a" if rss is None else f"{rss:.1f}" + _growth_text(model, t),
                fmt_ratio(analysis.figure_ratio(rss, model.rss(baseline))),
                f"{len(model.excluded(t))} / {len(model.excluded(t, 'cpu_us'))} / {len(model.bounded(t))}",
                order[t].text() if t in order else "not ranked",
                cpu_order[t].text() if t in cpu_order else "not ranked",
            ]
        )
    sources = sorted({a.rss_source for a in model.aggs.values() if a.rss_source})
    note = f"\n\nPeak RSS: {'; '.join(sources)}." if sources else ""
    return table(header, rows) + note


def _growth_text(model: Model, target: str) -> str:
    """' ⇡ (→ 1556.0 in one process)': where the server's RSS grew within a process, the mark
    and how far (its figure is then the footprint at a process's first cell)."""
    growth = model.rss_growth(target)
    return "" if growth is None else f" ⇡ (→ {growth.last_mib:.1f} in one process)"


def peak_ratio(peaks: dict, target: str, baseline: str) -> Optional[analysis.Figure]:
    """``target``'s peak over ``baseline``'s, with its bound; a server over itself is 1."""
    if target == baseline and peaks.get(target) is not None:
        return analysis.Figure(1.0)
    return analysis.figure_ratio(peaks.get(target), peaks.get(baseline))


def by_rank(targets: list[str], values: dict, ranks: dict) -> list[str]:
    """Servers by their figure, best first (the certain ranks never contradict that order), those
    without a figure last."""
    ranked = sorted((t for t in targets if t in ranks), key=lambda t: -float(values[t]))
    return ranked + [t for t in targets if t not in ranks]


def headline_lines(model: Model, baseline: Optional[str] = None) -> list[str]:
    """The lines a sweep prints when it ends, per protocol (like with like): each server's peak
    req/s with its repeats' noise and its certain place - a range "within noise of" the servers
    its repeats overlap, "uncertain against" those a bound leaves open - its peak against the
    baseline's and its best CPU us/req there. The same figures as the per-protocol tables."""
    base = baseline or model.settings.get("baseline")
    base = base if base in model.listed else (model.listed[0] if model.listed else None)
    lines = [
        "Peak req/s per protocol (closed loop; ≥ = a lower bound: loadbench's generator was the "
        "limit, the server did at least this, and at most its CPU ceiling):"
    ]
    width = max((len(t) for t in model.listed), default=0)
    for protocol in model.protocols:
        peak = {t: model.peak(t, protocol) for t in model.listed}
        ranks = model.peak_ranks(protocol)
        lines.append(f"{protocol}:")
        for t in by_rank(model.listed, peak, ranks):
            if t not in ranks:
                continue
            cpu = model.best_cpu(t, protocol)
            ratio = peak_ratio(peak, t, base) if base and t != base else None
            noise = fmt_noise(peak[t])
            lines.append(
                f"  {t:<{width}}  {fmt_int(peak[t]):>11}{f' {noise}' if noise else ''}"
                f"  rank {ranks[t].text()}"
                + (f"; {fmt_ratio(ratio)} {base}" if ratio is not None else "")
                + (f"; best CPU {fmt_us(cpu)} us/req" if cpu is not None else "")
            )
    return lines


def summary_note(model: Model, base: str) -> str:
    """How the summary's peaks, averages and ranks were chosen, per metric."""
    return (
        "Peak: the best closed-loop cell ranked for req/s of each server, over every protocol and "
        "workload it serves - each server at its best protocol: the per-protocol tables below "
        "compare like with like; best CPU us/req: the lowest of its closed-loop cells ranked for "
        "CPU us/req. Averages, per metric: over the server's own ranked closed-loop cells, "
        f"((k of n cells) where it has fewer than the {len(model.scope())} cells some server "
        "ranked for req/s: protocols or workloads it does not serve, or cells left out); a "
        "comparison of two servers' averages runs over the cells both have (Findings), so no "
        f"server gains from the cells it skipped or lost. The ratios compare with {base} (its "
        "peak over the server's, the server's peak RSS over its) and with the leader, the server "
        "with the highest peak. Ranked for every metric = at most "
        f"{100 * analysis.DIRTY_SHARE:g} % non-2xx/errors, not contended and steady. Who limited "
        "a cell is decided from both sides' CPU: a server that kept 90 % of its cores busy is the "
        f"limit whatever the generator did; a generator-bound cell ({GENERATOR_BOUND}) is ranked "
        'as what it proves: its req/s is a lower bound ("≥"), closed from above by the server\'s '
        'CPU ceiling ("≤ N by CPU", cores / CPU per response), so a peak or average it enters '
        "carries that interval (with how many of the averaged cells were bounds), and a ratio "
        "over it is a bound too; its CPU us/req and peak memory are the server's own. Ranks claim "
        "only the order that is certain beyond any bound and the repeats' noise (min-max): "
        "otherwise a rank is a range naming the servers it is within noise of or uncertain "
        "against. A server with no cell ranked for a metric is not ranked by it; peak RSS is "
        "over every measured cell."
    )


def _why(cells: list[Aggregate], metric: str = "rps") -> str:
    """'1 with > 1 % non-2xx/errors, 2 contended (...)': the reasons ``cells`` are not ranked
    for ``metric`` (generator-bound is a reason only for the metrics it bounds nothing of)."""
    dirty, contended, bound = (
        sum(1 for a in cells if flag(a))
        for flag in (
            lambda a: a.dirty,
            lambda a: a.contended,
            lambda a: (
                a.generator_bound
                and metric not in SERVER_COST_METRICS
                and metric not in BOUNDED_METRICS
            ),
        )
    )
    shares = [a.outside_share for a in cells if a.contended and a.outside_share is not None]
    why = [
        f"{dirty} with > {100 * analysis.DIRTY_SHARE:g} % non-2xx/errors" if dirty else "",
        f"{contended} contended"
        # each cell's share, as Findings names them (a range hid which cell took which)
        + (
            f" ({', '.join(f'{100 * x:.0f} %' for x in sorted(shares))} outside CPU)"
            if shares
            else ""
        )
        if contended
        else "",
        f"{bound} generator-bound" if bound else "",
    ]
    return ", ".join(w for w in why if w)


def excluded_text(model: Model, list_up_to: int = 24) -> str:
    """Which measured cells the summary and the bold marks leave out, and why (counted per
    server and reason when there are more than ``list_up_to``), then which enter only as
    lower bounds (generator-bound)."""
    excluded = model.excluded()
    bounded = model.bounded()
    if not excluded:
        text = "Every measured cell is ranked for req/s: none had more than 1 % non-2xx/errors or contention."
    else:
        head = (
            f"Left out of req/s peaks, averages, ranks and bold marks ({len(excluded)} measured cell(s); "
            "still shown in the tables with their marks): "
        )
        if len(excluded) <= list_up_to:
            text = (
                head
                + "; ".join(
                    f"{a.target} {a.protocol} {a.workload} {_load_name(a)} ({', '.join(a.exclusions())})"
                    for a in excluded
                )
                + "."
            )
        else:
            parts = []
            for t in model.listed:
                mine = model.excluded(t)
                if mine:
                    parts.append(
                        f"{t}: {len(mine)} of {sum(1 for a in model.cells(t, mode=None) if a.status == 'ok')} "
                        f"({_why(mine)})"
                    )
            text = head + "; ".join(parts) + ". The marks in the tables say which."
    if bounded:
        per = [f"{t}: {len(m)}" for t in model.listed if (m := model.bounded(t))]
        text += (
            f" Lower bounds ({GENERATOR_BOUND}, {len(bounded)} cell(s) - {'; '.join(per)}): the generator was "
            'the limit, so the server\'s req/s is at least the figure shown ("≥"); they enter peaks, '
            "averages and ranks as lower bounds, and their CPU us/req and peak memory as measured. Their "
            "latency percentiles are the generator's and are not ranked."
        )
    return text


def workload_table(
    aggs: dict[tuple, Aggregate], targets: list[str], protocol: str, workloads: list[str]
) -> str:
    """req/s per workload at the concurrency they share (the workload breakdown)."""
    common = None
    for w in workloads:
        cs = {k[4] for k in aggs if k[1] == protocol and k[2] == w and k[3] == "closed"}
        common = cs if common is None else common & cs
    if not common:
        return ""
    c = max(common)
    metric = METRICS[0]
    header = (
        ["Server"]
        + [f"{w} req/s" for w in workloads]
        + [f"{w} CPU us/req" for w in workloads]
        + [f"{w} non-2xx + errors" for w in workloads]
    )
    best = {
        w: best_target({t: aggs.get((t, protocol, w, "closed", c)) for t in targets}, metric)
        for w in workloads
    }
    best_cpu = {
        w: best_target({t: aggs.get((t, protocol, w, "closed", c)) for t in targets}, METRICS[3])
        for w in workloads
    }
    rows = []
    for t in targets:
        row = [t] + [
            cell_text(aggs.get((t, protocol, w, "closed", c)), metric, best[w] == t)
            for w in workloads
        ]
        row += [
            cell_text(aggs.get((t, protocol, w, "closed", c)), METRICS[3], best_cpu[w] == t)
            for w in workloads
        ]
        row += [cell_text(aggs.get((t, protocol, w, "closed", c)), BAD, False) for w in workloads]
        rows.append(row)
    cells = [aggs.get((t, protocol, w, "closed", c)) for t in targets for w in workloads]
    return f"At C = {c}.\n\n" + table(header, rows) + outcome_note(cells)
