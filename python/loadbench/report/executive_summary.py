"""The executive summary: the sentences a reader quotes, in seed report 001's words, generated
from the one report model - who leads by peak and by average req/s, the baseline's peak as a
share of the leader's and against every other server, the HTTP/2 / HTTP/1.1 ratio per server,
the lowest mean latency, memory and CPU per request, and the marks that qualify a sentence (a
lower bound, a contended or erroring cell) said in words.

Every number is a :class:`Number` that remembers where it came from (``source``: the model
method and its arguments), so a test can recompute each one from the model and find it in the
report's tables. The sentences never compute a figure of their own.

    points = executive_summary(model, "beast")
    print("\\n".join(markdown_lines(points)))      # report.md
    print(terminal_text(points))                    # `loadbench report --summary`
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..core import analysis
from .capacity import objectives_of as capacity_objectives
from .markdown import GENERATOR_BOUND
from .model import Aggregate, Model
from .seed_sections import PROTOCOL_NAMES
from .tables import peak_ratio

# Where a number comes from, as (kind, *arguments); `figure_of` evaluates one against a model.
Source = tuple


@dataclass(frozen=True)
class Number:
    """One number of a sentence: ``digits`` as printed ("607 300", "3.22x", "31.0 %"),
    ``text`` with the words of its bound ("at least 607 300"), ``value`` the model's figure."""

    text: str
    digits: str
    value: float
    source: Source


@dataclass
class Point:
    """One bullet of the summary, under a ``heading`` (seed 001: "Peak Throughput Ranking")."""

    heading: str
    text: str
    numbers: list[Number] = field(default_factory=list)


# -- how numbers are written (the tables' formats, the bound in words) -------------------------
def _rps(v: float) -> str:
    return f"{v:,.0f}".replace(",", " ")


def _ratio(v: float) -> str:
    return f"{v:.2f}x"


def _percent(v: float) -> str:
    return f"{100 * v:.1f} %"


def _ms(v: float) -> str:
    return f"{v:.2f}" if v >= 0.1 else f"{v:.3f}"


def _us(v: float) -> str:
    return f"{v:.2f}"


def _mib(v: float) -> str:
    return f"{v:.1f}"


def _count(v: float) -> str:
    return f"{v:.0f}"


def _bad_share(v: float) -> str:
    return f"{100 * v:.1f} %"


def _whole_percent(v: float) -> str:
    return f"{v:.0f} %"


def _share(v: float) -> str:
    return f"{100 * v:.0f} %"


BOUND_WORDS = {"lower": "at least ", "upper": "at most ", "unknown": "about "}


def figure_of(model: Model, base: str, source: Source) -> Optional[float]:
    """The model's figure for a ``source`` (the one place a summary number is computed)."""
    kind, *args = source
    if kind == "peak":
        return model.peak(*args)
    if kind == "average":
        return model.average(args[0])
    if kind == "mean_latency":
        return model.mean_latency(args[0])
    if kind == "best_cpu":
        return model.best_cpu(args[0])
    if kind == "rss":
        return model.rss(args[0])
    if kind in ("share_of_leader", "peak_ratio"):
        # a server's peak over the leader's (a share), or the baseline's over a server's
        # ("outperformed X by 3.22x"): the summary table's columns
        return peak_ratio({t: model.peak(t) for t in args}, args[0], args[1])
    if kind == "rss_ratio":  # the server's RSS over the baseline's: "8.66x less memory than X"
        return analysis.figure_ratio(model.rss(args[0]), model.rss(args[1]))
    if kind == "h2_h1":
        return model.h2_h1_ratio(*args)
    if kind == "h3_h2":
        return model.h3_h2_ratio(args[0])
    if kind == "cells":  # how many cells an average is over
        return float(len(model.common()))
    if kind == "bounded_cells":  # lower-bound cells, of one server or of all
        return float(len(model.bounded(args[0] if args else None)))
    if kind == "average_bounded":  # how many of an average's cells were lower bounds
        return float(getattr(model.average(args[0]), "bounded", 0))
    if kind == "outside_share":  # the most other processes took of the machine in a cell
        return model.aggs[tuple(args)].outside_share
    if kind == "bad_share":  # non-2xx answers and errors over a cell's outcomes
        return model.aggs[tuple(args)].bad_share
    if kind == "capacity":  # a capacity search's answer; a generator-bound one is a lower bound
        cell = model.capacities()[(args[0], args[1])]
        found = cell.capacity
        if found is not None:
            return analysis.Figure(found.median)
        return None if cell.lower_bound is None else analysis.Figure(cell.lower_bound, "lower")
    if kind == "servers":
        return float(len(model.targets))
    if kind == "setting":
        return float(args[1])
    raise ValueError(f"unknown summary source {kind!r}")


class _Writer:
    """Builds one Point, recording each number it writes."""

    def __init__(self, model: Model, base: str, heading: str) -> None:
        self.model, self.base, self.heading = model, base, heading
        self.numbers: list[Number] = []

    def num(self, source: Source, fmt: Callable[[float], str], words: bool = True) -> str:
        value = figure_of(self.model, self.base, source)
        if value is None:
            raise ValueError(f"no figure for {source}")
        digits = fmt(float(value))
        bound = getattr(value, "bound", None)
        text = (BOUND_WORDS.get(bound, "") if words else "") + digits
        self.numbers.append(Number(text, digits, value, source))
        return text

    def point(self, text: str) -> Point:
        point = Point(self.heading, text, self.numbers)
        self.numbers = []
        return point


def _where(w: "_Writer", cell: Optional[Aggregate]) -> str:
    """' (h2c json, C = 25)': the cell a peak came from."""
    if cell is None:
        return ""
    return f" ({cell.protocol} {cell.workload}, C = {w.num(('setting', 'concurrency', cell.load), _count)})"


def _leader(values: dict[str, Optional[float]], higher_is_better: bool) -> Optional[str]:
    """The server with the best figure (ranks never contradict that order)."""
    have = {t: v for t, v in values.items() if v is not None}
    if not have:
        return None
    return (max if higher_is_better else min)(have, key=lambda t: float(have[t]))


def _open_against(rank: analysis.Rank) -> str:
    """' (the order against nginx and rust-hyper is open: bounds on both sides)' or ''."""
    if rank.certain or not rank.uncertain:
        return ""
    return f" (the order against {_and(rank.uncertain)} is open: bounds on both sides)"


def _place(rank: analysis.Rank) -> str:
    """'#2 overall', or '#1-#3 overall, open against nginx and rust-hyper'."""
    if rank.certain:
        return f"#{rank.best} overall"
    return f"#{rank.best}-#{rank.worst} overall, open against {_and(rank.uncertain)}"


def _and(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _peak_points(model: Model, base: str) -> list[Point]:
    peaks = {t: model.peak(t) for t in model.targets}
    ranks = model.peak_ranks()
    leader = _leader(peaks, True)
    if leader is None or peaks.get(base) is None:
        return []
    place = ranks[base]
    w = _Writer(model, base, f"Peak throughput ({_place(place)})")
    text = f"{base} reached a peak throughput of {w.num(('peak', base), _rps)} req/s{_where(w, model.peak_cell(base))}"
    if leader == base:
        text += ", the highest figure of all servers" + _open_against(place) + "."
    else:
        text += (
            f", delivering {w.num(('share_of_leader', base, leader), _percent)} of {leader}'s "
            f"({w.num(('peak', leader), _rps)} req/s){_open_against(place)}."
        )
    out = [w.point(text)]
    if leader != base:
        others = [t for t in model.targets if t not in (base, leader) and peaks[t] is not None]
        if others:
            out.append(
                w.point(
                    f"Shares of {leader}'s peak: "
                    + ", ".join(
                        f"{t} {w.num(('share_of_leader', t, leader), _percent)}"
                        for t in sorted(others, key=lambda t: -float(peaks[t]))
                    )
                    + "."
                )
            )
    for t in sorted(
        (t for t in model.targets if t != base and peaks[t] is not None),
        key=lambda t: -float(peaks[t]),
    ):
        if t == leader:
            continue
        ratio = figure_of(model, base, ("peak_ratio", base, t))
        peak = w.num(("peak", t), _rps)
        if ratio is None:
            continue
        bound = getattr(ratio, "bound", None)
        if bound == "unknown":
            text = (
                f"Against {t} ({peak} req/s) the order is open: both peaks are lower bounds "
                f"(ratio {w.num(('peak_ratio', base, t), _ratio)})."
            )
        elif float(ratio) >= 1:
            text = f"Outperformed {t} ({peak} req/s) by {w.num(('peak_ratio', base, t), _ratio)}."
        else:
            text = f"Reached {w.num(('peak_ratio', base, t), _ratio)} of {t}'s peak ({peak} req/s)."
        out.append(w.point(text))
    return out


def _average_points(model: Model, base: str) -> list[Point]:
    averages = {t: model.average(t) for t in model.targets}
    if averages.get(base) is None:
        return []
    ranks = model.ranks(averages, higher_is_better=True)
    place = ranks[base]
    w = _Writer(model, base, f"Average throughput ({_place(place)})")
    avg = averages[base]
    bounded = (
        f", {w.num(('average_bounded', base), _count)} of them lower bounds"
        if getattr(avg, "bounded", 0)
        else ""
    )
    text = (
        f"{base} sustained an average of {w.num(('average', base), _rps)} req/s over the "
        f"{w.num(('cells',), _count)} closed-loop cells every server shares{bounded}"
    )
    latency = model.mean_latency(base)
    if latency is not None:
        text += f", with a mean latency of {w.num(('mean_latency', base), _ms)} ms"
    out = [w.point(text + ".")]
    leader = _leader(averages, True)
    if leader and leader != base:
        out.append(
            w.point(
                f"The highest average: {leader}, {w.num(('average', leader), _rps)} req/s"
                + _open_against(ranks[leader])
                + "."
            )
        )
    elif leader == base and not place.certain:
        out.append(w.point(f"{base} has the highest average{_open_against(place)}."))
    return out


def _latency_points(model: Model, base: str) -> list[Point]:
    latency = {t: model.mean_latency(t) for t in model.targets}
    leader = _leader(latency, False)
    if leader is None:
        return []
    ranks = model.ranks(latency, higher_is_better=False)
    w = _Writer(model, base, "Mean latency (the averaged cells, lower is better)")
    text = (
        f"Lowest mean latency: {leader}, {w.num(('mean_latency', leader), _ms)} ms"
        + _open_against(ranks[leader])
    )
    if leader != base and latency.get(base) is not None:
        text += f"; {base}: {w.num(('mean_latency', base), _ms)} ms"
    worst = _leader(latency, True)
    if worst not in (leader, base):
        text += f"; highest: {worst}, {w.num(('mean_latency', worst), _ms)} ms"
    return [w.point(text + ".")]


def _protocol_points(model: Model, base: str) -> list[Point]:
    out = []
    for label, h1, h2 in model.pairs():
        if h1 not in model.protocols or h2 not in model.protocols:
            continue
        w = _Writer(model, base, "HTTP/2 against HTTP/1.1 (peak over peak, same connections)")
        where = f"{'Cleartext' if label == 'cleartext' else 'Over TLS'} ({h2} vs {h1})"
        ratios = {t: model.h2_h1_ratio(t, h1, h2) for t in model.targets}
        measured = sorted(
            (t for t, r in ratios.items() if r is not None and r.bound != "unknown"),
            key=lambda t: -float(ratios[t]),
        )
        unknown = [t for t, r in ratios.items() if r is not None and r.bound == "unknown"]
        missing = [t for t, r in ratios.items() if r is None]
        parts = []
        if base in ratios and ratios[base] is not None:
            r = ratios[base]
            verdict = (
                "its HTTP/2 peak is above its HTTP/1.1 peak"
                if float(r) > 1 and r.bound in (None, "lower")
                else "its HTTP/2 peak is below its HTTP/1.1 peak"
                if float(r) < 1 and r.bound in (None, "upper")
                else "both peaks are lower bounds, so which protocol is faster is open"
            )
            parts.append(
                f"{base}'s {PROTOCOL_NAMES[h2]} peak ({w.num(('peak', base, h2), _rps)} req/s) is "
                f"{w.num(('h2_h1', base, h1, h2), _ratio)} its {PROTOCOL_NAMES[h1]} peak "
                f"({w.num(('peak', base, h1), _rps)} req/s): {verdict}"
            )
        others = [t for t in measured if t != base]
        if others:
            parts.append(
                "the others: "
                + ", ".join(f"{t} {w.num(('h2_h1', t, h1, h2), _ratio)}" for t in others)
            )
        rest = [t for t in unknown if t != base]
        if rest:
            parts.append(
                "open for "
                + _and(f"{t} ({w.num(('h2_h1', t, h1, h2), _ratio)})" for t in rest)
                + ", whose peaks on both protocols are lower bounds"
            )
        no_h2 = [t for t in missing if model.peak(t, h1) is not None and model.peak(t, h2) is None]
        if no_h2:
            parts.append(f"{_and(no_h2)} measured no {h2} cell")
        if parts:
            out.append(w.point(f"{where}: " + "; ".join(parts) + "."))
    return out + _h3_points(model, base)


def _h3_points(model: Model, base: str) -> list[Point]:
    """HTTP/3 against HTTP/2 over TLS (issue 33): each server's H3 / H2 peak ratio, when the
    sweep measured both."""
    if "h3" not in model.protocols or "h2" not in model.protocols:
        return []
    w = _Writer(model, base, "HTTP/3 against HTTP/2 over TLS (peak over peak, same connections)")
    ratios = {t: model.h3_h2_ratio(t) for t in model.targets}
    measured = sorted(
        (t for t, r in ratios.items() if r is not None), key=lambda t: -float(ratios[t])
    )
    if not measured:
        return []
    parts = [
        f"{t} {w.num(('h3_h2', t), _ratio)} ({w.num(('peak', t, 'h3'), _rps)} vs "
        f"{w.num(('peak', t, 'h2'), _rps)} req/s)"
        for t in measured
    ]
    no_h3 = [t for t in model.targets if ratios[t] is None and model.peak(t, "h2") is not None]
    text = "HTTP/3 peak over HTTP/2 (TLS) peak: " + ", ".join(parts)
    if no_h3:
        text += f"; {_and(no_h3)} measured no h3 cell"
    return [w.point(text + ".")]


def _memory_points(model: Model, base: str) -> list[Point]:
    rss = {t: model.rss(t) for t in model.targets}
    if rss.get(base) is None:
        return []
    w = _Writer(model, base, "Memory footprint (peak RSS of the server's process tree)")
    lowest, highest = _leader(rss, False), _leader(rss, True)
    text = f"{base}'s peak RSS was {w.num(('rss', base), _mib)} MiB"
    if highest != base:
        text += (
            f", consuming {w.num(('rss_ratio', highest, base), _ratio)} less memory than "
            f"{highest} ({w.num(('rss', highest), _mib)} MiB)"
        )
    if lowest != base:
        text += (
            f"; the lowest was {lowest}'s {w.num(('rss', lowest), _mib)} MiB "
            f"({w.num(('rss_ratio', lowest, base), _ratio)} of {base}'s)"
        )
    else:
        text += ", the lowest of all servers"
    return [w.point(text + ".")]


def _cpu_points(model: Model, base: str) -> list[Point]:
    cpu = {t: model.best_cpu(t) for t in model.targets}
    order = sorted((t for t in cpu if cpu[t] is not None), key=lambda t: float(cpu[t]))
    if not order:
        return []
    w = _Writer(model, base, "CPU per request (server CPU time / exact responses, best cell)")
    text = (
        f"Lowest server CPU per request: {order[0]}, {w.num(('best_cpu', order[0]), _us)} us"
        + (
            "; then " + ", ".join(f"{t} {w.num(('best_cpu', t), _us)}" for t in order[1:]) + " us"
            if len(order) > 1
            else ""
        )
        + ". Unlike req/s, this does not move when the generator is the limit."
    )
    return [w.point(text)]


def _capacity_points(model: Model, base: str) -> list[Point]:
    """Per protocol searched: each server's capacity under the objectives, highest first."""
    cells = model.capacities()
    if not cells:
        return []
    objectives = capacity_objectives(model)
    w = _Writer(model, base, f"Capacity under {' and '.join(objectives)} (open loop, searched)")
    out = []
    for protocol in dict.fromkeys(p for _, p in cells):
        have = {
            t: v
            for (t, p) in cells
            if p == protocol and (v := figure_of(model, base, ("capacity", t, p))) is not None
        }
        if not have:
            continue
        order = sorted(have, key=lambda t: -float(have[t]))
        listed = ", ".join(f"{t} {w.num(('capacity', t, protocol), _rps)}" for t in order)
        bounded = [t for t in order if getattr(have[t], "bound", None)]
        note = (
            f"; for {_and(bounded)} the generator was the limit, so the server's capacity is "
            "at least that"
            if bounded
            else ""
        )
        out.append(w.point(f"Over {protocol}, in req/s: {listed}{note}."))
    return out


def _cell_words(w: "_Writer", a: Aggregate) -> str:
    """'node h2 plaintext C = 25', 'beast http plaintext, open loop at 50 %', 'go https
    plaintext, a new connection per request at c = 20'."""
    where = f"{a.target} {a.protocol} {a.workload}"
    if a.mode == "open":  # its load is a percentage of the server's closed-loop capacity
        return f"{where}, open loop at {w.num(('setting', 'load', a.load), _whole_percent)} of capacity"
    load = w.num(("setting", "load", a.load), _count)
    if a.mode == "connect":
        return f"{where}, a new connection per request at c = {load}"
    return f"{where} C = {load}"


def _qualification_points(model: Model, base: str) -> list[Point]:
    w = _Writer(model, base, "What qualifies these sentences")
    out = []
    bounded = model.bounded()
    if bounded:
        per = ", ".join(
            f"{t} {w.num(('bounded_cells', t), _count)}" for t in model.targets if model.bounded(t)
        )
        out.append(
            w.point(
                f'"At least": in {w.num(("bounded_cells",), _count)} cells ({per}) loadbench\'s '
                f"own generator, not the server, was the limit ({GENERATOR_BOUND} in the tables), "
                "so those req/s are lower bounds: the server answered at least that many, and a "
                "faster or larger generator would show more. Their CPU per request and memory are "
                "the server's own."
            )
        )
    excluded = model.excluded()
    contended = [a for a in excluded if a.contended]
    dirty = [a for a in excluded if a.dirty]
    if contended:
        out.append(
            w.point(
                "Left out as contended (another process took a share of the machine during the "
                "window, even after re-runs): "
                + "; ".join(
                    _cell_words(w, a)
                    + (
                        f" ({w.num(('outside_share', *a.key), _share)} outside CPU)"
                        if a.outside_share is not None
                        else ""
                    )
                    for a in contended
                )
                + "."
            )
        )
    if dirty:
        out.append(
            w.point(
                "Left out for errors (too many non-2xx answers or errors to rank: a server that "
                "sheds load as fast errors looks fast): "
                + "; ".join(
                    _cell_words(w, a)
                    + f" ({w.num(('bad_share', *a.key), _bad_share)} non-2xx/errors)"
                    for a in dirty
                )
                + "."
            )
        )
    starved = [a for a in model.cells() if a.status == "ok" and a.starved]
    if starved:
        out.append(
            w.point(
                "Under-driven (‡: connections lost to errors or reconnects, so the server saw "
                "fewer requests in flight than C): "
                + "; ".join(_cell_words(w, a) for a in starved)
                + "."
            )
        )
    failed = [a for a in model.aggs.values() if a.status == "fail"]
    if failed:
        out.append(
            w.point(
                "Failed (the server died or never became ready): "
                + "; ".join(f"{a.target} {a.protocol} {a.workload}" for a in failed)
                + "."
            )
        )
    if not out:
        out.append(
            w.point(
                "Every cell was measured cleanly: no lower bound, no contended or erroring cell."
            )
        )
    return out


def scope_point(model: Model, base: str) -> Point:
    """What was measured, in one sentence: servers, protocols, workloads, C, repeats, machine."""
    w = _Writer(model, base, "What was measured")
    settings = model.settings
    cs = sorted({a.load for a in model.cells()})
    cores = model.cores
    cpus = (settings.get("server_cpus"), settings.get("generator_cpus"))

    def cpu_list(which: str, values: list) -> str:
        return ", ".join(w.num(("setting", which, c), _count, words=False) for c in values)

    text = (
        f"{w.num(('servers',), _count)} servers ({', '.join(model.targets)}) over "
        f"{', '.join(model.protocols)}, workloads {', '.join(model.workloads)}, closed loop at "
        + "C = "
        + ", ".join(w.num(("setting", "concurrency", c), _count, words=False) for c in cs)
        + (
            f", on a {w.num(('setting', 'cores', cores), _count, words=False)}-core machine"
            if cores
            else ""
        )
        + (
            f" (servers on CPU {cpu_list('server_cpus', cpus[0])}, generator on CPU "
            f"{cpu_list('generator_cpus', cpus[1])})"
            if all(isinstance(c, list) and c for c in cpus)
            else ""
        )
        + f"; ratios compare with {base}."
    )
    return w.point(text)


def executive_summary(model: Model, base: str) -> list[Point]:
    """The summary's points in reading order (seed 001's: peak, average, latency, HTTP/2,
    memory), then CPU per request and what qualifies the sentences."""
    out = [scope_point(model, base)]
    for part in (
        _peak_points,
        _average_points,
        _latency_points,
        _protocol_points,
        _memory_points,
        _cpu_points,
        _capacity_points,
        _qualification_points,
    ):
        out += part(model, base)
    return out


def by_heading(points: list[Point]) -> list[tuple[str, list[Point]]]:
    """The points grouped under their headings, in order (every layout shows them so)."""
    groups: list[tuple[str, list[Point]]] = []
    for p in points:
        if not groups or groups[-1][0] != p.heading:
            groups.append((p.heading, []))
        groups[-1][1].append(p)
    return groups


def markdown_lines(points: list[Point]) -> list[str]:
    """Seed 001's layout: a bullet per heading, its sentences as sub-bullets."""
    lines: list[str] = []
    for heading, group in by_heading(points):
        lines += [f"- **{heading}:**"] + [f"  - {p.text}" for p in group]
    return lines


def terminal_text(points: list[Point], width: int = 100) -> str:
    """The same points for a terminal: headings, then wrapped, indented sentences."""
    out: list[str] = []
    for heading, group in by_heading(points):
        out.append(f"{heading}:")
        for p in group:
            out += textwrap.wrap(p.text, width, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(out)
