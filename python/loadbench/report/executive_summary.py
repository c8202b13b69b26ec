"""The executive summary: what a reader takes away, on one screen, generated from the one
report model - one short paragraph per protocol family that compares like with like (each
server's peak over that protocol, in tiers: ">" where every server before it is certainly
above every one after it - beyond the repeats' noise and any bound, a generator-bound figure
counting up to its CPU ceiling - "≈" within noise), the capacity under the objectives the same
way, the memory footprint against the nearest peer and the range, and what was left out.
Everything else the data says is under "Findings" (report/findings.py).

Every number is a :class:`Number` that remembers where it came from (``source``: the model
method and its arguments), so a test can recompute each one from the model and find it in the
report's tables. The sentences never compute a figure of their own.

    points = executive_summary(model, "beast")
    print("\\n".join(paragraph_lines(points)))    # report.md
    print(terminal_text(points))                    # `loadbench report --summary`
"""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..core import analysis, protocols
from .capacity import objectives_of as capacity_objectives
from .chains import chain_text, numbered_tiers, tier_text
from .model import Model
from .orders import capacity_figures, nearest, protocol_peaks, tiers
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
    """One paragraph or bullet of the summary, under a ``heading`` ("HTTP/1.1 (http)")."""

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


def noise_percent(share: float) -> str:
    """'13 %' (the "±" of a figure within noise, as the tables print it); '0.4 %' below 1 %."""
    return f"{100 * share:.0f} %" if share >= 0.01 else f"{100 * share:.1f} %"


def _noise(v: float) -> str:
    return noise_percent(v / 100)


def _upper(value: Optional[float]) -> Optional[analysis.Figure]:
    return None if value is None else analysis.Figure(value, "upper")


def figure_of(model: Model, base: str, source: Source) -> Optional[float]:
    """The model's figure for a ``source`` (the one place a summary number is computed)."""
    kind, *args = source
    if kind == "peak":
        return model.peak(*args)
    if kind == "ceiling":  # the CPU ceiling that closes a generator-bound peak from above
        peak = model.peak(*args)
        return None if peak is None else _upper(peak.ceiling)
    if kind == "noise":  # the largest half-range (%) of the repeats among servers' peaks
        protocol, *members = args
        return 100 * max(analysis.noise_share(model.peak(t, protocol)) for t in members)
    if kind == "average":
        return model.average(*args)
    if kind == "average_cells":  # how many cells an average covers
        average = model.average(*args)
        return None if average is None else float(average.cells)
    if kind == "mean_latency":
        return model.mean_latency(*args)
    if kind == "best_cpu":
        return model.best_cpu(*args)
    if kind == "rss":
        return model.rss(args[0])
    if kind in ("share_of_leader", "peak_ratio"):
        # a server's peak over another's (over one protocol when given): the tables' columns
        protocol = args[2] if len(args) > 2 else None
        return peak_ratio({t: model.peak(t, protocol) for t in args[:2]}, args[0], args[1])
    if kind == "rss_ratio":  # one server's RSS over another's
        return analysis.figure_ratio(model.rss(args[0]), model.rss(args[1]))
    if kind == "h2_h1":
        return model.h2_h1_ratio(*args)
    if kind == "h3_h2":
        return model.h3_h2_ratio(args[0])
    if kind == "bounded_cells":  # lower-bound cells, of one server or of all
        return float(len(model.bounded(args[0] if args else None)))
    if kind == "outside_share":  # the most other processes took of the machine in a cell
        return model.aggs[tuple(args)].outside_share
    if kind == "bad_share":  # non-2xx answers and errors over a cell's outcomes
        return model.aggs[tuple(args)].bad_share
    if kind == "capacity":  # the median of a server's searches; [L, U] where bounded
        return model.capacities()[(args[0], args[1])].figure
    if kind == "capacity_ceiling":
        figure = model.capacities()[(args[0], args[1])].figure
        return None if figure is None else _upper(figure.ceiling)
    if kind == "capacity_ratio":  # one server's capacity over another's, over one protocol
        figures = capacity_figures(model, args[0])
        return analysis.figure_ratio(figures.get(args[1]), figures.get(args[2]))
    if kind == "capacity_noise":
        protocol, *members = args
        figures = capacity_figures(model, protocol)
        return 100 * max(analysis.noise_share(figures[t]) for t in members)
    if kind == "searches":  # how many searches a capacity is the median of
        return float(max(len(c.searches) for c in model.capacities().values()))
    if kind == "servers":
        return float(len(model.listed))
    if kind == "left_out":  # closed-loop cells left out of the orders for one reason
        if args[0] == "failed":
            return float(sum(1 for a in model.cells() if a.status == "fail"))
        return float(sum(1 for a in model.excluded() if a.mode == "closed" and getattr(a, args[0])))
    if kind == "bounded_closed":  # closed-loop cells that enter the orders as bounds
        return float(sum(1 for a in model.bounded() if a.mode == "closed"))
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


def and_(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def with_ceiling(w: _Writer, source: Source, ceiling: Source) -> str:
    """'153 033', or 'at least 101 202 (at most 119 012 by CPU)': a figure, and the CPU
    ceiling that closes it from above when it is a bound that has one."""
    text = w.num(source, _rps)
    if getattr(figure_of(w.model, w.base, source), "ceiling", None) is not None:
        text += f" ({w.num(ceiling, _rps)} by CPU)"
    return text


# -- the paragraphs ----------------------------------------------------------------------------
def _protocol_paragraph(
    model: Model, base: str, protocol: str, steps: bool = True
) -> Optional[Point]:
    peaks = protocol_peaks(model, protocol)
    order = tiers(peaks)
    if not order:
        return None
    label = protocols.label(protocol)
    w = _Writer(model, base, f"{label} ({protocol})")

    def number(t: str) -> str:
        return with_ceiling(w, ("peak", t, protocol), ("ceiling", t, protocol))

    def noise(members: list[str]) -> str:
        return w.num(("noise", protocol, *members), _noise)

    numbered = numbered_tiers(
        order, base, {t for t, v in peaks.items() if v is not None and v.bound}
    )
    body = chain_text(
        order,
        [tier_text(tier, number, noise, i in numbered) for i, tier in enumerate(order)],
        (lambda a, b: w.num(("peak_ratio", a, b, protocol), _ratio)) if steps else None,
    )
    return w.point(f"{body}.")


def _capacity_paragraph(model: Model, base: str, steps: bool = True) -> list[Point]:
    """Per protocol searched: the capacities under the objectives, in tiers."""
    cells = model.capacities()
    if not cells:
        return []
    objectives = capacity_objectives(model)
    out = []
    for protocol in dict.fromkeys(p for _, p in cells):
        figures = capacity_figures(model, protocol)
        # A bound nothing closes from above (contended searches, and no steady closed-loop peak
        # over the protocol) could be above any other server: in a tier it would merge every
        # server below it into one "order open". It is named after the order instead.
        unclosed = [t for t, f in figures.items() if f is not None and math.isinf(f.interval[1])]
        order = tiers({t: f for t, f in figures.items() if t not in unclosed})
        if not order:
            continue
        w = _Writer(model, base, f"Capacity under {' and '.join(objectives)} ({protocol})")

        def number(t: str, protocol=protocol, w=w) -> str:
            return with_ceiling(w, ("capacity", t, protocol), ("capacity_ceiling", t, protocol))

        def noise(members: list[str], protocol=protocol, w=w) -> str:
            return w.num(("capacity_noise", protocol, *members), _noise)

        def bare(t: str, protocol=protocol, w=w) -> str:
            return w.num(("capacity", t, protocol), _rps)

        # (a bound elsewhere keeps its [L, U] for the Findings and the table: the word budget;
        # so does one inside a tier whose order bounds leave open - its CPU ceiling orders
        # nothing there, and fourteen servers' ceilings took 30 of the summary's 300 words)
        numbered = numbered_tiers(order, base, set())
        body = chain_text(
            order,
            [
                tier_text(tier, bare if tier.open else number, noise, i in numbered)
                for i, tier in enumerate(order)
            ],
            (lambda a, b, p=protocol, w=w: w.num(("capacity_ratio", p, a, b), _ratio))
            if steps
            else None,
        )
        if unclosed:
            body += "; open above (contended, no steady peak): " + ", ".join(
                f"{t} {number(t)}" for t in sorted(unclosed, key=lambda t: -float(figures[t]))
            )
        searches = w.num(("searches",), _count)
        plural = "es" if figure_of(model, base, ("searches",)) != 1 else ""
        out.append(
            w.point(
                f"open loop, median of {searches} search{plural} (uncontended ones where any "
                f"were); a bound no CPU ceiling closes ends at the closed-loop peak: {body}."
            )
        )
    return out


def _memory_paragraph(model: Model, base: str) -> list[Point]:
    rss = {t: model.rss(t) for t in model.listed}
    peer = nearest(rss, base)
    if rss.get(base) is None:
        return []
    w = _Writer(model, base, "Memory (peak RSS)")
    text = f"{base} {w.num(('rss', base), _mib)} MiB"
    if peer is not None:
        # the peer's over the baseline's, as the summary table's column divides them
        text += (
            f"; the nearest peer, {peer}, {w.num(('rss', peer), _mib)} MiB "
            f"({w.num(('rss_ratio', peer, base), _ratio)} {base}'s)"
        )
    have = {t: v for t, v in rss.items() if v is not None}
    low, high = min(have, key=have.get), max(have, key=have.get)
    if low != high:
        text += (
            f"; the servers span {w.num(('rss', low), _mib)} MiB ({low}) to "
            f"{w.num(('rss', high), _mib)} MiB ({high})"
        )
    return [w.point(text + ".")]


def scope_point(model: Model, base: str, steps: bool = True) -> Point:
    """What was measured, in one sentence, and how to read the orders."""
    w = _Writer(model, base, "")
    settings = model.settings
    cs = sorted({a.load for a in model.cells() if a.status == "ok"})
    cores = model.cores
    cpus = (settings.get("server_cpus"), settings.get("generator_cpus"))
    repeats = settings.get("repeats")

    def cpu_list(which: str, values: list) -> str:
        return ", ".join(w.num(("setting", which, c), _count, words=False) for c in values)

    workloads = [x for x in model.workloads if model.cells(workload=x)]
    text = (
        f"Peak req/s of {w.num(('servers',), _count)} servers per protocol ("
        + ", ".join(model.protocols)
        + (f"; {', '.join(workloads)}" if workloads else "")
        + (
            "; closed loop, C = "
            + ", ".join(w.num(("setting", "concurrency", c), _count, words=False) for c in cs)
            if cs
            else ""
        )
        + (
            f"; median of {w.num(('setting', 'repeats', repeats), _count, words=False)} repeats"
            if repeats and repeats > 1
            else ""
        )
        + (
            f"; servers on CPU {cpu_list('server_cpus', cpus[0])}, generator on CPU "
            f"{cpu_list('generator_cpus', cpus[1])}"
            if all(isinstance(c, list) and c for c in cpus)
            else ""
        )
        + (f" of {w.num(('setting', 'cores', cores), _count, words=False)} cores" if cores else "")
        + "). >: certainly faster, beyond the replications' noise and any bound; ≈: within noise "
        "(±: half the replications' confidence interval); "
        + ("(Nx): over the next." if steps else "steps: tables' This ÷ next.")
    )
    return w.point(text)


def _left_out_point(model: Model, base: str) -> list[Point]:
    """What the orders leave out, counted (each cell is named under Findings)."""
    w = _Writer(model, base, "Left out")
    reasons = (
        ("contended", "contended (⚑)"),
        ("not_steady", "not steady (↗)"),
        ("dirty", "erroring (✗)"),
        ("failed", "failed"),
    )
    parts = [
        f"{w.num(('left_out', flag), _count)} {what}"
        for flag, what in reasons
        if figure_of(model, base, ("left_out", flag))
    ]
    if figure_of(model, base, ("bounded_closed",)):
        parts.append(f"{w.num(('bounded_closed',), _count)} bounds (§) kept as intervals")
    if not parts:
        return []
    return [w.point("; ".join(parts) + " (Findings names them).")]


# The summary fits on one screen: at most this many words (word_count) under its heading.
SUMMARY_WORDS = 300


def executive_summary(model: Model, base: str) -> list[Point]:
    """The summary's paragraphs in reading order: what was measured, a paragraph per protocol
    (like with like), capacity, memory, and what the orders leave out. Each chain gives its
    step ratios (each tier over the next) where the summary stays within SUMMARY_WORDS; with
    many servers they stay in the tables' "This ÷ next" column, and the summary says so."""
    out = _summary(model, base, steps=True)
    if word_count("\n".join(paragraph_lines(out))) + 3 > SUMMARY_WORDS:  # + its heading
        out = _summary(model, base, steps=False)
    return out


def _summary(model: Model, base: str, steps: bool) -> list[Point]:
    out = [scope_point(model, base, steps)]
    for p in model.protocols:
        point = _protocol_paragraph(model, base, p, steps)
        if point is not None:
            out.append(point)
    out += _capacity_paragraph(model, base, steps)
    out += _memory_paragraph(model, base)
    out += _left_out_point(model, base)
    return out


# -- layouts -----------------------------------------------------------------------------------
def by_heading(points: list[Point]) -> list[tuple[str, list[Point]]]:
    """The points grouped under their headings, in order (every layout shows them so)."""
    groups: list[tuple[str, list[Point]]] = []
    for p in points:
        if not groups or groups[-1][0] != p.heading:
            groups.append((p.heading, []))
        groups[-1][1].append(p)
    return groups


def paragraph_lines(points: list[Point]) -> list[str]:
    """The summary's layout: a paragraph per point, its heading in bold before it."""
    lines: list[str] = []
    for p in points:
        lines += [(f"**{p.heading}**: " if p.heading else "") + p.text, ""]
    return lines


def markdown_lines(points: list[Point]) -> list[str]:
    """Seed 001's layout (the Findings): a bullet per heading, its sentences as sub-bullets."""
    lines: list[str] = []
    for heading, group in by_heading(points):
        lines += [f"- **{heading}:**"] + [f"  - {p.text}" for p in group]
    return lines


def terminal_text(points: list[Point], width: int = 100) -> str:
    """The same points for a terminal: headings, then wrapped, indented sentences."""
    out: list[str] = []
    for heading, group in by_heading(points):
        if heading:
            out.append(f"{heading}:")
        for p in group:
            out += textwrap.wrap(p.text, width, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(out)


WORD = re.compile(r"\S*[0-9A-Za-z]\S*")


def word_count(text: str) -> int:
    """Words as a reader counts them: runs of non-space holding a letter or digit ("153 033"
    is two, "≈" and ">" none)."""
    return len(WORD.findall(text))
