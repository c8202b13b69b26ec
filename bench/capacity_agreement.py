#!/usr/bin/env python3
"""Do two sweeps agree on each server's capacity? Reads two results folders (no measuring) and
writes a table of what each states for every server's capacity, and whether the two agree.

    python3 bench/capacity_agreement.py reports/2026-12-03-vm reports/2026-12-03-vm-2
    # -> reports/capacity-agreement.md (--out to change)

What a sweep states for a server is what its report's capacity table prints
(loadbench.report.capacity_cells): the median of its searches, each on a freshly started server,
the range of their low ends as the noise, and - where the generator (or its pool) limited a
search - an interval [L, U] with U the server's CPU ceiling (a lower bound without a ceiling is
open above). Its **span** runs from the lowest of those numbers to the highest, a found
search's first failing rate included (its knee lies below it): every value the sweep leaves
possible. Two sweeps **agree** on a server when their spans overlap - the question
"capacities of the same server in two default sweeps agree within their stated ranges" - and
the table shows how far apart the medians are beside it, and the server's own CPU per response at
its best closed-loop cell of the same protocol and workload in each sweep: a capacity that moved
with that cost moved because the server or the machine changed between the sweeps (the same
load, the same generator), not because of the search. Spans that overlap only because one of
them is a lower bound open above (no CPU ceiling closed it) are not called agreement: such a
side can agree with any higher figure, so the verdict is "open bound".
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Optional

from loadbench import model as report_model
from loadbench.core.errors import LoadbenchError
from loadbench.report.markdown import fmt_int, table


def span(cell) -> Optional[tuple[float, float]]:
    """(low, high) of every capacity one sweep's cell leaves possible; None when no search of it
    passed a rate. A found capacity is the highest rate that passed every run below the lowest
    the server failed: the knee lies between the two (the search stops when they are within its
    precision, 2 % by default), so that failing rate bounds the span from above."""
    figure = cell.figure
    if figure is None:
        return None
    low, high = figure.interval
    if figure.spread is not None:
        low, high = min(low, figure.spread[0]), max(high, figure.spread[1])
    failing = [
        float(s["first_failing"])
        for s in cell.trusted()
        if s.get("outcome") == "capacity" and s.get("first_failing")
    ]
    if failing:
        high = max(high, *failing)
    return low, high


def stated(cell) -> str:
    """The figure as the report states it: "21 461 (21 178 - 21 743)", "≥ 53 136 (≤ 73 928 by
    CPU; 51 000 - 56 815)"."""
    if cell.status != "ok":  # the server was not installed, or would not start
        return f"not measured ({cell.status})"
    figure = cell.figure
    if figure is None:
        return "n/a (nothing passed)"
    text = fmt_int(float(figure))
    if figure.bound == "lower":
        high = figure.interval[1]
        text = f"≥ {text}" + (f" (≤ {fmt_int(high)} by CPU)" if math.isfinite(high) else "")
    if figure.spread is not None:
        text += f", range {fmt_int(figure.spread[0])} - {fmt_int(figure.spread[1])}"
    used, outcomes = len(cell.intervals()), cell.outcomes
    counts = ", ".join(f"{outcomes.count(o)} {o}" for o in sorted(set(outcomes)))
    return f"{text} [{used} of {len(outcomes)} searches stated; {counts}]"


def agreement(a, b) -> tuple[str, str]:
    """("yes" / "NO" / "open bound" / "n/a", the medians' difference) of two sweeps' cells of
    one server."""
    sa, sb = span(a), span(b)
    if sa is None or sb is None:
        return "n/a", ""
    fa, fb = float(a.figure), float(b.figure)
    diff = f"{100 * (fb - fa) / fa:+.1f} %" if fa else ""
    if max(sa[0], sb[0]) > min(sa[1], sb[1]):
        return "NO", diff
    # the overlap holds with each side's open end cut at its highest figure: real agreement
    closed = [(lo, hi if math.isfinite(hi) else max(lo, f)) for (lo, hi), f in ((sa, fa), (sb, fb))]
    if max(closed[0][0], closed[1][0]) <= min(closed[0][1], closed[1][1]):
        return "yes", diff
    return "open bound", diff


def own_cost(model, cell):
    """The server's CPU us per response at its best closed-loop cell of the capacity's protocol
    and workload, a Figure with its repeats' spread (None without a sampled server)."""
    return None if cell is None else model.best_cpu(cell.target, cell.protocol, cell.workload)


def cost_moved(a, b) -> bool:
    """The two sweeps' repeats of that cost do not overlap: the server's own cost changed."""
    if a is None or b is None or a.spread is None or b.spread is None:
        return False
    return a.spread[1] < b.spread[0] or b.spread[1] < a.spread[0]


def cost_text(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None:
        return ""
    return f"{a:.1f} → {b:.1f} ({100 * (b - a) / a:+.0f} %)"


def render(first: Path, second: Path) -> str:
    ma, mb = report_model.load(first), report_model.load(second)
    ca, cb = ma.capacities(), mb.capacities()
    keys = list(ca) + [k for k in cb if k not in ca]
    rows, verdicts, moved = [], [], []
    for key in keys:
        a, b = ca.get(key), cb.get(key)
        cost_a, cost_b = own_cost(ma, a), own_cost(mb, b)
        cost = cost_text(cost_a, cost_b)
        if a is None or b is None:
            rows.append(
                [
                    *key,
                    stated(a) if a else "not run",
                    stated(b) if b else "not run",
                    "n/a",
                    "",
                    cost,
                ]
            )
            continue
        verdict, diff = agreement(a, b) if a.status == b.status == "ok" else ("n/a", "")
        verdicts.append(verdict)
        if verdict == "NO" and cost_moved(cost_a, cost_b):
            moved.append(f"{key[0]} {cost_text(cost_a, cost_b)}")
        rows.append([*key, stated(a), stated(b), verdict, diff, cost])
    objectives = sorted({o for c in [*ca.values(), *cb.values()] for o in c.objectives})
    lines = [
        "# Capacity in two sweeps: do they agree?",
        "",
        f"Generated by `bench/capacity_agreement.py {first} {second}` from the two folders' raw "
        "results (no measuring). Objectives: " + (", ".join(objectives) or "none") + ".",
        "",
        "Each side is what that sweep's report states: the median of its searches (each on a "
        "freshly started server), the range of their low ends, and [L, U] where the generator "
        "limited a search (U: the server's CPU ceiling). The sides agree when the spans of "
        "capacities they leave possible (up to a found search's first failing rate) overlap; `open bound` when they overlap only because a "
        "lower bound is open above; `change` is the second median against the first.",
        "",
        table(
            [
                "Server",
                "Protocol",
                str(first),
                str(second),
                "agree",
                "change",
                "server CPU us/response at its closed-loop best",
            ],
            rows,
        ),
        "",
        f"{verdicts.count('yes')} of {len(verdicts)} servers agree"
        + (f"; {verdicts.count('NO')} do not" if "NO" in verdicts else "")
        + (
            f"; {verdicts.count('open bound')} only through a bound open above"
            if "open bound" in verdicts
            else ""
        )
        + (f"; {verdicts.count('n/a')} n/a" if "n/a" in verdicts else "")
        + ".",
        "",
    ]
    if moved:
        lines += [
            f"Of those that do not, {len(moved)} moved with the server's own CPU us per response at "
            "the same closed-loop load (the two sweeps' repeats of it do not overlap): "
            + ", ".join(moved)
            + ". The server or the machine changed between the sweeps; the searches measured "
            "what was there.",
            "",
        ]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("first", type=Path, help="a sweep's results folder")
    p.add_argument("second", type=Path, help="another sweep's results folder")
    p.add_argument("--out", type=Path, default=Path("reports/capacity-agreement.md"))
    args = p.parse_args(argv)
    try:
        text = render(args.first, args.second)
    except (LoadbenchError, OSError, ValueError) as e:
        print(f"capacity_agreement: {e}", file=sys.stderr)
        return 1
    args.out.write_text(text)
    print(text.strip().splitlines()[-1])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
