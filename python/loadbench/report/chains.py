"""The executive summary's chains: a protocol's (or a capacity's) servers in tiers joined by
">" (report/orders.py decides the tiers), each tier written with its figures, why its members
are not ordered and the certain pairs inside it, and each step with its ratio to the next
tier.
"""

from __future__ import annotations

from typing import Callable, Optional

from .orders import Tier


def tier_text(
    tier: Tier,
    number: Callable[[str], str],
    noise: Callable[[list[str]], str],
    numbered: bool,
) -> str:
    """'beast 153 033 ≈ nginx 149 410 (±13 %; beast > rust-hyper)': a tier's servers, their
    figures when ``numbered``, why they are not ordered (the repeats' noise, or bounds) and the
    certain pairs inside it when there are at most three (all of them are under Findings)."""
    members = tier.members
    # a long tier prints its ends' figures only (the tables below have every one): the
    # summary stays on one screen however many servers a tier holds
    shown = set(members) if len(members) <= 3 else {members[0], members[-1]}

    def named(server: str) -> str:
        return server + (f" {number(server)}" if numbered and server in shown else "")

    text = named(members[0])
    for a, b in zip(members, members[1:]):
        # never "≈" between two figures whose order is certain (vm-3 read "ruby-puma 4 239 ≈
        # hypercorn 2 456" beside "(ruby-puma > hypercorn)"): certain neighbours read ">"
        text += (" > " if (a, b) in tier.inner else " ≈ ") + named(b)
    if len(members) == 1:
        return text
    why = "order open: bounds" if tier.open else f"±{noise(members)}"
    said = set(zip(members, members[1:]))
    rest = [pair for pair in tier.inner if pair not in said]
    inner = ""
    if 0 < len(rest) <= 3:
        above: dict[str, list[str]] = {}
        for a, b in rest:
            above.setdefault(a, []).append(b)
        inner = "; " + "; ".join(f"{a} > {', '.join(bs)}" for a, bs in above.items())
    elif rest:
        # a tier one noisy server holds together can span servers certainly apart (2026-12-07:
        # beast and nim, 2.8x apart, in one tier bridged by python-asyncio's wide interval):
        # never read as "all within noise"
        inner = f"; {rest[0][0]} > {rest[0][1]} and more certain orders inside it: Findings"
    # a ">" in the chain must not be read on to a server further along whose order is not
    # certain ("x > y ≈ z" with x against z within noise): those pairs are named
    certain = [pair in tier.inner for pair in zip(members, members[1:])]
    unsure: dict[str, list[str]] = {}
    for i, a in enumerate(members):
        for j in range(i + 2, len(members)):
            if any(certain[i:j]) and (a, members[j]) not in tier.inner:
                unsure.setdefault(a, []).append(members[j])
    if unsure:
        inner += "; " + "; ".join(f"{a} ≈ {', '.join(bs)}" for a, bs in unsure.items())
    return f"{text} ({why}{inner})"


def chain_text(
    order: list[Tier], texts: list[str], step: Optional[Callable[[str, str], str]]
) -> str:
    """The tiers' ``texts`` joined by ">", each but the last followed by its ratio to the next
    one, in brackets: ``step(a, b)`` writes the lowest figure of the tier over the highest of
    the next - "by how much" for every step of the chain, not only between its first and its
    last server. Without ``step`` (a summary over its word budget) the steps stay in the
    tables' "This ÷ next" column."""
    if step is None:
        return " > ".join(texts)
    out = texts[0]
    for above, below, text in zip(order, order[1:], texts[1:]):
        out += f" ({step(above.members[-1], below.members[0])}) > {text}"
    return out


def numbered_tiers(tiers_: list[Tier], base: str, bounded: set[str]) -> set[int]:
    """Which tiers print their figures: the first, the baseline's, the last (the range) and
    any holding a bound (its CPU ceiling is what proves its order)."""
    return {0, len(tiers_) - 1} | {
        i for i, t in enumerate(tiers_) if base in t.members or bounded & set(t.members)
    }
