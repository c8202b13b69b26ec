"""report.md's "Capacity under the objective" section and the data of its chart, from the
capacity searches the model folds (``Model.capacities()``, report/capacity_cells.py)."""

from __future__ import annotations

from typing import Optional

from ..core import analysis
from ..slo.objectives import parse_objective
from .capacity_cells import CapacityCell
from .markdown import CONTENDED, fmt_int, fmt_noise, fmt_ratio, fmt_us, table
from .orders import capacity_figures


def _capacity_text(c: CapacityCell) -> str:
    """'64 561' (found: the median of the searches), '≥ 96 405 (≤ 126 937 by CPU)' (the
    generator was the limit: [L, U]), 'none', or why there is no search."""
    if c.status != "ok":
        return "FAIL" if c.status == "fail" else "n/a"
    figure = c.figure
    return "none" if figure is None else fmt_int(figure)


def _range_text(c: CapacityCell) -> str:
    """'62 000 - 66 000 (3)': the lowest and highest of the searches' figures and how many."""
    ivs = c.intervals()
    if len(ivs) < 2:
        return ""
    lows = [lo for lo, _ in ivs]
    return f"{fmt_int(min(lows))} - {fmt_int(max(lows))} ({len(ivs)})"


def _outcome_text(c: CapacityCell) -> str:
    if c.status != "ok":
        return c.note or c.status
    words = {
        "capacity": "found",
        "generator-bound": "generator-bound: the server's capacity is above the figure, below "
        "its CPU ceiling",
        "pool-bound": "pool-bound: sends waited for a free connection; the capacity is above "
        "the figure",
        "below-start": "failed at every rate tried",
        "unstable": "unstable: passed only in some runs",
        "not-converged": "did not converge",
        "stopped": "stopped: a step lost part of its generator (a shard's worker)",
    }
    text = "; ".join(sorted({words.get(o, o) for o in c.outcomes}))
    if c.raised_by_open_loop:
        rate, n = c.open_loop
        text += (
            f"; at least {fmt_int(rate)}: the open-loop table met the objectives there in every "
            f"window of all {n} replications (fresh servers), by the search's own rule - the "
            "searches stated less"
        )
    if c.contended_steps:
        text += (
            f"; {CONTENDED} {c.contended_steps} contended step(s): other processes took a share "
            "of the machine, the figure is doubtful"
        )
    return text


def _following(order: list[CapacityCell], listed: list[str], figures: dict) -> dict:
    """Per (server, protocol): its capacity over the next lower one's of the same protocol, as
    the executive summary's chain writes it after the server ("" for the last)."""
    out: dict = {}
    above: dict = {}
    for c in order:
        f = figures[c.protocol].get(c.target)
        if c.target not in listed or f is None:
            continue
        if c.protocol in above:
            out[(above[c.protocol], c.protocol)] = fmt_ratio(
                analysis.figure_ratio(figures[c.protocol][above[c.protocol]], f)
            )
        above[c.protocol] = c.target
    return out


def _held(settings: dict) -> str:
    """How long the answer was confirmed: the sweep's capacity_hold (never below its steps); a
    folder from before the hold confirmed with a step like the others."""
    duration = settings.get("duration", 0) or 0
    hold = settings.get("capacity_hold")
    if hold is None or hold <= duration:
        return "the answer confirmed with one more step"
    return f"the answer confirmed by holding it for {hold:g} s"


def section(model) -> list[str]:
    """report.md's "Capacity under the objective" lines (empty without capacity cells)."""
    cells = model.capacities()
    if not cells:
        return []
    objectives = objectives_of(model)
    settings = model.settings
    searches = max((len(c.searches) for c in cells.values()), default=0)
    rows = []
    figures = {p: capacity_figures(model, p) for p in {c.protocol for c in cells.values()}}
    order = sorted(cells.values(), key=lambda c: -float(c.figure or 0))
    following = _following(order, model.listed, figures)
    for c in order:
        if c.target not in model.listed:
            continue
        spread = c.achieved_at_capacity
        rows.append(
            [
                c.target,
                c.protocol,
                _capacity_text(c),
                _range_text(c),
                fmt_noise(figures[c.protocol].get(c.target)),
                following.get((c.target, c.protocol), ""),
                "" if spread is None else f"{fmt_int(spread.min)} - {fmt_int(spread.max)}",
                "" if c.first_failing is None else fmt_int(c.first_failing),
                c.failing_objective or "",
                fmt_us(c.cpu_us_at_capacity) or "",
                str(len(c.steps())),
                _outcome_text(c),
            ]
        )
    header = [
        "Server",
        "Protocol",
        "Capacity (req/s)",
        "Searches: lowest - highest (n)",
        "Noise",
        "This ÷ next",
        "Sent at capacity, min - max (req/s)",
        "First failing rate (req/s)",
        "Failing objective",
        "Server CPU us/req at capacity",
        "Steps",
        "Outcome",
    ]
    return [
        f"## Capacity under the objective: {' and '.join(objectives)}",
        "",
        "The highest open-loop rate each server took while meeting every objective, over the whole "
        f"step and over every 1 s window in it (`loadbench capacity`; {searches} search(es) per "
        f"server, {next(iter(cells.values())).workload} at C = {next(iter(cells.values())).connections}, "
        "each step's pool sized before it from Little's law at its rate and the latency objective, "
        "and not grown while judged - the open-loop cells' rule too): from "
        "half the closed-loop peak measured above, up while "
        f"steps pass and down while they fail, bisected to {100 * settings.get('capacity_precision', 0.05):g} % "
        f"and confirmed; each step {settings.get('warmup', 0):g} s of settling and "
        f"{settings.get('capacity_step') or settings.get('duration', 0):g} s judged, {_held(settings)}. Latency is corrected for coordinated omission. "
        "A search whose generator could not send on time (its threads saturated or its loop late: "
        "generator-bound; sends queued for a free connection of its pool: pool-bound) claims no "
        "capacity: it shows the highest passing rate as a lower bound (≥), because the generator "
        "side, not the server, was the limit, and the server's CPU ceiling as the upper end (≤ by "
        "CPU: its cores / the least CPU time per response this folder measured for the server and "
        "protocol, in any cell or step - left out where it would lie below a throughput the folder "
        "measured): the capacity lies in that interval. With several searches per server (each "
        "on a freshly started server) the figure is their median and the next column their range - "
        "never one search's luck. Noise: half the span from the lowest search to the highest "
        "first failing rate of a found capacity, over the median - the ± with which the executive "
        "summary calls two capacities ≈. The open-loop cells are judged by the same rule (every "
        "window of every replication), and a capacity is never stated below a rate they passed.",
        "",
        table(header, rows),
        "",
    ]


def chart_steps(model) -> dict[str, dict[str, list[tuple[float, float, bool]]]]:
    """{protocol: {server: [(achieved req/s, corrected p99 ms, passed), ...]}} over every step of
    every search, sorted by rate: the latency-vs-load curve the search measured on its way, each
    step with its verdict (the chart draws the knee through the passing steps and the failed ones
    faint beside it)."""
    out: dict[str, dict[str, list[tuple[float, float, bool]]]] = {}
    for c in model.capacities().values():
        points = sorted(
            (s["achieved_rate"], s["latency_ms"]["p99"], bool(s.get("passed")))
            for s in c.steps()
            if s.get("latency_ms") and s.get("achieved_rate")
        )
        if points:
            out.setdefault(c.protocol, {})[c.target] = points
    return out


def chart_series(model) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """:func:`chart_steps` without the verdicts: (achieved req/s, corrected p99 ms) per step."""
    return {
        protocol: {t: [(x, y) for x, y, _ in points] for t, points in per_server.items()}
        for protocol, per_server in chart_steps(model).items()
    }


def latency_limit_ms(objectives: list[str]) -> Optional[float]:
    """The p99 objective's limit in ms (the line the chart draws), if there is one."""
    for text in objectives:
        o = parse_objective(text)
        if o.metric == "p99":
            return o.limit / 1000
    return None


def objectives_of(model) -> list[str]:
    """The objectives the sweep's capacity searches were judged by."""
    return next((c.objectives for c in model.capacities().values() if c.objectives), [])
