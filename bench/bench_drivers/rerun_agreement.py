"""Do a sweep's conclusions survive a re-run? Two results folders of the same sweep (the same
commit and machine, one after the other), read as a reader would (issue 57's done-when):

- cells: the share of the second run's cell medians (req/s of every closed-loop cell ranked in
  both) inside the first run's stated intervals (its 95 % interval of the replications,
  core/replication.py) - and the other way round;
- orders: every pair of servers the first run orders for certain on a protocol's peak (the
  report's one rule, core/figures.compare) that the second run orders the other way (a
  reversal), or calls ≈ (a weakening, which is no contradiction);
- A/A: each server listed twice (twins) reads ≈ itself in both runs (report/aa_check.py);
- capacity: no capacity below a rate the same report's open-loop table passed under the same
  objective (report/capacity_cells.py's evidence).

    python3 bench/rerun_agreement.py reports/FIRST reports/SECOND   # -> reports/rerun-agreement.md
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional

from loadbench.core import analysis
from loadbench.report import aa_check
from loadbench.report.markdown import table
from loadbench.report.model import Model
from loadbench.report.model import load as load_model

from .checkout import reports_dir
from .report_text import write_report


def _closed(model: Model) -> dict[tuple, object]:
    return {
        k: a for k, a in model.aggs.items() if k[3] == "closed" and a.ranked and a.rps is not None
    }


def cells_inside(first: Model, second: Model) -> tuple[int, int, list[str]]:
    """(inside, compared, the cells outside): second's medians against first's intervals."""
    mine, theirs = _closed(first), _closed(second)
    inside, compared, outside = 0, 0, []
    for key in sorted(set(mine) & set(theirs), key=str):
        interval = mine[key].figure("rps").spread
        if interval is None:
            continue
        compared += 1
        value = theirs[key].rps.median
        if interval[0] <= value <= interval[1]:
            inside += 1
        else:
            outside.append(
                f"{' '.join(map(str, key[:3]))} C={key[4]}: {value:,.0f} outside "
                f"{interval[0]:,.0f}-{interval[1]:,.0f}".replace(",", " ")
            )
    return inside, compared, outside


def orders(first: Model, second: Model) -> tuple[int, list[str], list[str]]:
    """(certain orders in first, those reversed in second, those second calls ≈ or open)."""
    certain, reversed_, weakened = 0, [], []
    for protocol in first.protocols:
        if protocol not in second.protocols:
            continue
        peaks_a = {t: first.peak(t, protocol) for t in first.listed}
        peaks_b = {t: second.peak(t, protocol) for t in second.listed}
        names = [t for t in peaks_a if peaks_a[t] is not None and peaks_b.get(t) is not None]
        for i, x in enumerate(names):
            for y in names[i + 1 :]:
                verdict = analysis.compare(peaks_a[x], peaks_a[y], True)
                if verdict not in ("better", "worse"):
                    continue
                certain += 1
                hi, lo = (x, y) if verdict == "better" else (y, x)
                again = analysis.compare(peaks_b[hi], peaks_b[lo], True)
                if again == "worse":
                    reversed_.append(f"{protocol}: {hi} > {lo} became {lo} > {hi}")
                elif again != "better":
                    weakened.append(f"{protocol}: {hi} > {lo} became {again}")
    return certain, reversed_, weakened


def capacity_denials(model: Model) -> list[str]:
    """Capacities stated below a rate the same report's open-loop table passed."""
    out = []
    for (target, protocol), cell in model.capacities().items():
        figure = cell.figure
        if cell.open_loop and figure is not None and cell.open_loop[0] > float(figure):
            out.append(f"{target} {protocol}: {float(figure):,.0f} < {cell.open_loop[0]:,.0f}")
    return out


def _aa(model: Model) -> str:
    found = aa_check.verdicts(model)
    if not found:
        return "no server listed twice"
    held = sum(1 for v in found if v.held)
    return f"{held} of {len(found)} comparisons ≈" + (
        ""
        if held == len(found)
        else " - FAILED: "
        + "; ".join(f"{v.twin} {v.protocol} {v.metric} {v.verdict}" for v in found if not v.held)
    )


def render(first_dir: Path, second_dir: Path, command: str) -> str:
    first, second = load_model(first_dir), load_model(second_dir)
    rows, details = [], []
    for a, b, name_a, name_b in (
        (first, second, first_dir.name, second_dir.name),
        (second, first, second_dir.name, first_dir.name),
    ):
        inside, compared, outside = cells_inside(a, b)
        certain, reversed_, weakened = orders(a, b)
        share = f"{100 * inside / compared:.0f} %" if compared else "n/a"
        rows.append(
            [
                f"{name_b} against {name_a}'s intervals",
                f"{inside} of {compared} ({share})",
                f"{certain}",
                f"{len(reversed_)}",
                f"{len(weakened)}",
            ]
        )
        details += [
            f"**{name_b}'s medians outside {name_a}'s intervals**: "
            + ("; ".join(outside) or "none")
            + "."
        ]
        details += [
            f"**{name_a}'s certain orders reversed in {name_b}**: "
            + ("; ".join(reversed_) or "none")
            + "."
        ]
        details += [
            f"**... called ≈ (or open) in {name_b}**: " + ("; ".join(weakened) or "none") + "."
        ]
    lines = [
        "# Does a sweep survive a re-run?",
        "",
        f"Generated by `{command}` from [{first_dir.name}/]({first_dir.name}/) and "
        f"[{second_dir.name}/]({second_dir.name}/) (each a results folder with its raw data and "
        "its own report). Do not edit by hand.",
        "",
        "Cells: how many of one run's closed-loop cell medians (req/s, cells ranked in both) lie "
        "inside the other run's stated interval (its 95 % interval of the replications). Orders: "
        "the pairs of servers one run orders for certain on a protocol's peak, and how the other "
        "run reads them - reversed (a contradiction) or ≈/open (weaker, no contradiction). A/A: "
        "each server listed twice must read ≈ itself. Capacity: none may be stated below a rate "
        "the same report's open-loop table passed under the same objective.",
        "",
        table(
            [
                "Check",
                "Cell medians (closed loop, req/s) inside the other run's interval",
                "Certain orders (peaks per protocol)",
                "Reversed",
                "Called ≈ or open",
            ],
            rows,
        ),
        "",
        f"A/A ({first_dir.name}): {_aa(first)}. A/A ({second_dir.name}): {_aa(second)}.",
        "",
        "Capacities below a rate the same report's open-loop table passed: "
        f"{first_dir.name}: {'; '.join(capacity_denials(first)) or 'none'}; "
        f"{second_dir.name}: {'; '.join(capacity_denials(second)) or 'none'}.",
        "",
        *[d + "\n" for d in details],
    ]
    return "\n".join(lines) + "\n"


def main(repo: Optional[Path] = None, argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", help="the first results folder")
    parser.add_argument("second", help="the second results folder (the re-run)")
    parser.add_argument("--out", default=None, help="report (default reports/rerun-agreement.md)")
    args = parser.parse_args(argv)
    report = Path(args.out) if args.out else reports_dir(repo) / "rerun-agreement.md"
    command = f"python3 bench/rerun_agreement.py {args.first} {args.second}"
    write_report(report, render(Path(args.first), Path(args.second), command))
    print(report)
    return 0
