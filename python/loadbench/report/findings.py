"""The findings under the executive summary: everything the data says beyond the headline,
in seed report 001's bullets - per protocol, where the baseline stands against every other
server (a ratio where the order is certain, "within noise" or "open" where it is not) and the
certain orders inside the headline's tiers; averages and latency per protocol; HTTP/2 against
HTTP/1.1 and HTTP/3 against HTTP/2; CPU per request; the capacity searches; and the marks that
qualify a sentence (a bound, a contended, unsteady or erroring cell) said in words. Every number
is a :class:`~loadbench.report.executive_summary.Number` with its source, as in the summary.
"""

from __future__ import annotations

from ..core import analysis, protocols
from .capacity import objectives_of as capacity_objectives
from .executive_summary import (
    Point,
    _bad_share,
    _count,
    _ms,
    _noise,
    _ratio,
    _rps,
    _share,
    _us,
    _whole_percent,
    _Writer,
    and_,
    with_ceiling,
)
from .markdown import GENERATOR_BOUND
from .model import Aggregate, Model
from .orders import capacity_figures, protocol_peaks, protocol_tiers


def _verdict_words(w: _Writer, base: str, other: str, protocol: str) -> str:
    """How ``base``'s peak stands against ``other``'s over one protocol: '1.82x h2o',
    'within noise of nginx (±8 %)', 'open against rust-hyper (bounds)'."""
    mine, theirs = w.model.peak(base, protocol), w.model.peak(other, protocol)
    verdict = analysis.compare(mine, theirs, True)
    if verdict == "noise":
        return f"within noise of {other} (±{w.num(('noise', protocol, base, other), _noise)})"
    if verdict == "open":
        return f"open against {other} (bounds on both sides)"
    return f"{w.num(('peak_ratio', base, other, protocol), _ratio)} {other}'s"


def _climb(v: float) -> str:
    return f"{v:g}x"


def _place(rank: analysis.Rank) -> str:
    """'1st', '1st-3rd (within noise of nginx)': a place in words (a rank is no number)."""
    return analysis.ordinal(rank.best) if rank.certain else rank.text()


def _peak_points(model: Model, base: str) -> list[Point]:
    """Per protocol: the baseline's peak and how it stands against each other server's."""
    out = []
    for p in model.protocols:
        peaks = protocol_peaks(model, p)
        if peaks.get(base) is None:
            continue
        w = _Writer(model, base, "Peak throughput per protocol (like with like)")
        rank = model.peak_ranks(p)[base]
        others = sorted(
            (t for t in peaks if t != base and peaks[t] is not None), key=lambda t: -float(peaks[t])
        )
        text = (
            f"{protocols.label(p)} ({p}): {base} {w.num(('peak', base, p), _rps)} req/s, "
            f"{_place(rank)}"
        )
        if others:
            text += "; against the others: " + ", ".join(
                _verdict_words(w, base, t, p) for t in others
            )
        out.append(w.point(text + "."))
    return out


def _inner_points(model: Model, base: str) -> list[Point]:
    """The certain orders the headline's tiers hold inside them (every certain pair is said)."""
    out = []
    for p in model.protocols:
        pairs = [pair for tier in protocol_tiers(model, p) for pair in tier.inner]
        if not pairs:
            continue
        w = _Writer(model, base, "Certain orders inside the summary's tiers")
        above: dict[str, list[str]] = {}
        for a, b in pairs:
            above.setdefault(a, []).append(b)
        text = "; ".join(f"{a} > {and_(bs)}" for a, bs in above.items())
        out.append(w.point(f"{protocols.label(p)} ({p}): {text}."))
    return out


def _average_points(model: Model, base: str) -> list[Point]:
    """Per protocol: the baseline's average over its cells and its place by average, judged
    pair by pair over the cells two servers share (never n/a for want of a cell all share)."""
    out = []
    for p in model.protocols:
        avg = model.average(base, p)
        if avg is None:
            continue
        w = _Writer(model, base, "Average throughput per protocol (pairs judged over shared cells)")
        rank = model.average_ranks(p)[base]
        text = (
            f"{protocols.label(p)} ({p}): {base} averaged {w.num(('average', base, p), _rps)} "
            f"req/s over its {w.num(('average_cells', base, p), _count)} cell(s), {_place(rank)}"
        )
        latency = model.mean_latency(base, p)
        if latency is not None:
            text += f"; mean latency {w.num(('mean_latency', base, p), _ms)} ms"
        out.append(w.point(text + "."))
    return out


def _latency_points(model: Model, base: str) -> list[Point]:
    """Per protocol: the lowest mean latency (lower is better), judged pair by pair over the
    cells the two servers share (:meth:`Model.average_ranks`) - never one server's own cells
    against another's (vm-3 named nginx lowest on https at 0.20 ms over its cells where, over
    the cells both have, beast averaged 0.175 and nginx 0.198). The figures over the server's
    own cells are in the protocol tables; the sentence names the order only."""
    out = []
    for p in model.protocols:
        ranks = model.average_ranks(p, "mean_ms", higher_is_better=False)
        own = {t: model.mean_latency(t, p) for t in ranks}
        first = sorted((t for t, r in ranks.items() if r.best == 1), key=lambda t: float(own[t]))
        if not first:
            continue
        w = _Writer(model, base, "Mean latency per protocol (closed loop, lower is better)")
        rest = sorted((t for t in own if t not in first), key=lambda t: float(own[t]))
        text = f"{protocols.label(p)} ({p}): lowest {and_(first)}"
        if len(first) > 1:
            text += " (within noise, or open, over the cells each pair shares)"
        elif rest:
            mine = model.average(first[0], p, "mean_ms", shared_with=rest[0])
            theirs = model.average(rest[0], p, "mean_ms", shared_with=first[0])
            certain = mine is not None and theirs is not None
            certain = certain and analysis.compare(mine, theirs, False) == "better"
            text += f", {'below' if certain else 'not certainly above'} {rest[0]} over the cells both have"
        if base not in first and base in ranks:
            text += f"; {base} {_place(ranks[base])}"
        out.append(w.point(text + "."))
    return out


def _protocol_points(model: Model, base: str) -> list[Point]:
    out = []
    for label, h1, h2 in model.pairs():
        if h1 not in model.protocols or h2 not in model.protocols:
            continue
        w = _Writer(model, base, "HTTP/2 against HTTP/1.1 (peak over peak, same connections)")
        where = f"{'Cleartext' if label == 'cleartext' else 'Over TLS'} ({h2} vs {h1})"
        ratios = {t: model.h2_h1_ratio(t, h1, h2) for t in model.listed}
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
                f"{base}'s {protocols.get(h2).short} peak ({w.num(('peak', base, h2), _rps)} req/s) is "
                f"{w.num(('h2_h1', base, h1, h2), _ratio)} its {protocols.get(h1).short} peak "
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
                + and_(f"{t} ({w.num(('h2_h1', t, h1, h2), _ratio)})" for t in rest)
                + ", whose peaks on both protocols are lower bounds"
            )
        no_h2 = [t for t in missing if model.peak(t, h1) is not None and model.peak(t, h2) is None]
        if no_h2:
            parts.append(f"{and_(no_h2)} measured no {h2} cell")
        if parts:
            out.append(w.point(f"{where}: " + "; ".join(parts) + "."))
    return out + _h3_points(model, base)


def _h3_points(model: Model, base: str) -> list[Point]:
    """HTTP/3 against HTTP/2 over TLS (issue 33): each server's H3 / H2 peak ratio, when the
    sweep measured both."""
    if "h3" not in model.protocols or "h2" not in model.protocols:
        return []
    w = _Writer(model, base, "HTTP/3 against HTTP/2 over TLS (peak over peak, same connections)")
    ratios = {t: model.h3_h2_ratio(t) for t in model.listed}
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
    no_h3 = [t for t in model.listed if ratios[t] is None and model.peak(t, "h2") is not None]
    text = "HTTP/3 peak over HTTP/2 (TLS) peak: " + ", ".join(parts)
    if no_h3:
        text += f"; {and_(no_h3)} measured no h3 cell"
    return [w.point(text + ".")]


def _cpu_points(model: Model, base: str) -> list[Point]:
    """Per protocol: each server's lowest CPU per request - like with like (vm-3 set beast's
    h2c cell, 1.56 us, against nginx's HTTP/1.1 one, 4.64)."""
    out = []
    for p in model.protocols:
        cpu = {t: model.best_cpu(t, p) for t in model.listed}
        order = sorted((t for t in cpu if cpu[t] is not None), key=lambda t: float(cpu[t]))
        if not order:
            continue
        w = _Writer(model, base, "CPU per request (server CPU time / exact responses, best cell)")
        text = (
            f"{protocols.label(p)} ({p}): lowest {order[0]}, "
            f"{w.num(('best_cpu', order[0], p), _us)} us"
            + (
                "; then "
                + ", ".join(f"{t} {w.num(('best_cpu', t, p), _us)}" for t in order[1:])
                + " us"
                if len(order) > 1
                else ""
            )
            + "."
        )
        out.append(w.point(text))
    if out:
        out[-1].text += " Unlike req/s, this does not move when the generator is the limit."
    return out


def _capacity_points(model: Model, base: str) -> list[Point]:
    """Per protocol searched: each server's capacity under the objectives, highest first: the
    median of its searches with their range, [L, U] where the generator was the limit."""
    cells = model.capacities()
    if not cells:
        return []
    objectives = capacity_objectives(model)
    w = _Writer(model, base, f"Capacity under {' and '.join(objectives)} (open loop, searched)")
    out = []
    for protocol in dict.fromkeys(p for _, p in cells):
        have = {t: f for t, f in capacity_figures(model, protocol).items() if f is not None}
        if not have:
            continue
        order = sorted(have, key=lambda t: -float(have[t]))

        listed = ", ".join(
            f"{t} {with_ceiling(w, ('capacity', t, protocol), ('capacity_ceiling', t, protocol))}"
            for t in order
        )
        bounded = [t for t in order if have[t].bound]
        note = (
            f"; {_bound_reasons(bounded, {t: cells[(t, protocol)].bound_by for t in bounded})}, "
            "so the capacity is at least that (and at most the server's CPU ceiling where it was "
            "measured)"
            if bounded
            else ""
        )
        out.append(w.point(f"Over {protocol}, in req/s: {listed}{note}."))
    return out


# Why a capacity is a bound, in the words of the searches' outcome: "generator" only where the
# generator's own evidence said so (core/limits.py: its threads' busy share, its loop's lateness).
_BOUND_WORDS = {
    "generator-bound": "the generator was the limit",
    "pool-bound": "sends waited for a free connection of the generator's pool while its threads "
    "kept up",
    "contended": "other processes took part of the machine",
}


def _bound_reasons(servers: list[str], why: dict) -> str:
    """'for beast and nginx the generator was the limit; for pypy-hypercorn sends waited ...':
    the bounded servers grouped by the reason their searches give."""
    groups: dict[str, list[str]] = {}
    for t in servers:
        groups.setdefault(
            _BOUND_WORDS.get(why.get(t) or "", "the search found no capacity"), []
        ).append(t)
    return "; ".join(f"for {and_(ts)} {words}" for words, ts in groups.items())


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
            f"{t} {w.num(('bounded_cells', t), _count)}" for t in model.listed if model.bounded(t)
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
    unsteady = [a for a in excluded if a.not_steady]
    if unsteady:
        out.append(
            w.point(
                "Left out as not steady (↗: the repeats only climbed, the last at least "
                f"{w.num(('setting', 'climb', analysis.NOT_STEADY_CLIMB), _climb)} the first - "
                "a JIT or cache still warming): "
                + "; ".join(_cell_words(w, a) for a in unsteady)
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


def findings(model: Model, base: str) -> list[Point]:
    """The findings in reading order: peaks per protocol against the baseline, the certain
    orders inside the summary's tiers, averages and latency per protocol, HTTP/2 against
    HTTP/1.1, CPU per request, capacity, and what qualifies the sentences."""
    out: list[Point] = []
    for part in (
        _peak_points,
        _inner_points,
        _average_points,
        _latency_points,
        _protocol_points,
        _cpu_points,
        _capacity_points,
        _qualification_points,
    ):
        out += part(model, base)
    return out
