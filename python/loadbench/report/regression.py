"""The regression gate over a comparison (loadbench.comparison), and its text forms.

    loadbench compare base new --fail 'rps:-5%' --fail 'p99:+10%'

A threshold ``METRIC:[+|-]N%`` fails the gate when, in any compared cell, that metric changed
*significantly* (exact Mann-Whitney U, p < alpha) by more than N % in the threshold's
direction (without a sign: the metric's worse direction: down for rps, up for latency and CPU).
Exit status: 1 when a threshold failed (or a cell FAILed / turned non-2xx in the new results),
else 2 when some judged cell was inconclusive (too few repeats, an open-loop cell off its rate,
a contended cell or a generator-bound latency, or a req/s whose lower bound leaves the verdict
``uncertain`` - each unless ``judge_flagged``, which judges the figures as if measured), else 0. A new req/s significantly below a base lower
bound is a certain regression and fails like any other (see loadbench.comparison).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Optional

from ..core.errors import ConfigError
from .comparison import Metric, metric

PASS, FAIL, INCONCLUSIVE = 0, 1, 2
_THRESHOLD = re.compile(r"^\s*([A-Za-z0-9./_]+)\s*:\s*([+-]?)\s*(\d+(?:\.\d+)?)\s*%?\s*$")


@dataclass(frozen=True)
class Threshold:
    metric: Metric
    pct: float  # signed: -5 fails a drop beyond 5 %, +10 a rise beyond 10 %

    @property
    def text(self) -> str:
        return f"{self.metric.name}:{self.pct:+g}%"

    def crossed(self, change_pct: Optional[float]) -> bool:
        if change_pct is None or math.isnan(change_pct):
            return False
        return change_pct < self.pct if self.pct < 0 else change_pct > self.pct


def parse_threshold(text: str) -> Threshold:
    """'rps:-5%' / 'p99:+10%' / 'cpu:5' (no sign: the metric's worse direction)."""
    match = _THRESHOLD.match(text)
    if not match:
        raise ConfigError(f"--fail {text!r}: expected METRIC:[+|-]N%, e.g. 'rps:-5%' or 'p99:+10%'")
    m = metric(match.group(1))
    value = float(match.group(3))
    sign = match.group(2) or ("-" if m.higher_is_better else "+")
    return Threshold(m, -value if sign == "-" else value)


@dataclass
class GateResult:
    status: int  # PASS, FAIL or INCONCLUSIVE (the exit status)
    failures: list[str] = field(default_factory=list)
    inconclusive: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    thresholds: list[str] = field(default_factory=list)

    @property
    def word(self) -> str:
        return {PASS: "PASS", FAIL: "FAIL", INCONCLUSIVE: "INCONCLUSIVE"}[self.status]


def _cell(row) -> str:
    load = {
        "closed": f"C={row['load']}",
        "connect": f"new-conn c={row['load']}",
        "open": f"open {row['load']}",
    }.get(row["mode"], str(row["load"]))
    return f"{row['target']} {row['protocol']} {row['workload']} {load}"


def _pct(v: Optional[float]) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:+.1f} %"


def evaluate(frame, thresholds: Sequence[Threshold], judge_flagged: bool = False) -> GateResult:
    """Judge a comparison DataFrame against ``thresholds`` (see the module docstring)."""
    result = GateResult(PASS, thresholds=[t.text for t in thresholds])
    if not thresholds:
        return result
    records = frame.to_dict("records")
    # a cell that FAILed or turned non-2xx in the new results fails any gate
    failed = {_cell(r): r["note"] for r in records if r["verdict"] == "FAIL in new"}
    result.failures += [f"{cell}: FAIL in new ({note})" for cell, note in failed.items()]
    dirty = {
        _cell(r): r["flags_new"]
        for r in records
        if "non-2xx" in (r["flags_new"] or "") and "non-2xx" not in (r["flags_base"] or "")
    }
    result.failures += [
        f"{cell}: new results have non-2xx answers or errors ({why})" for cell, why in dirty.items()
    ]
    for t in thresholds:
        mine = [r for r in records if r["metric"] == t.metric.name and r["verdict"] != "missing"]
        if not mine:  # e.g. cpu from runs without a sampled server: nothing to judge is no pass
            result.inconclusive.append(f"{t.text}: no cell has {t.metric.label} in both results")
        for row in mine:
            where = f"{_cell(row)} {t.metric.label}"
            verdict, flagged = row["verdict"], bool(row["flags"])
            if judge_flagged and verdict == "uncertain":  # judged on the figures, as if measured
                verdict = row["verdict_figures"]
            if verdict in ("missing", "FAIL in new"):
                continue
            if verdict in ("too few repeats", "not comparable"):
                result.inconclusive.append(f"{where}: {verdict} ({row['note']})")
            elif verdict == "uncertain":
                result.inconclusive.append(f"{where}: uncertain ({row['bounds']})")
            elif flagged and not judge_flagged and _cell(row) not in dirty:
                result.inconclusive.append(f"{where}: flagged ({row['flags']})")
            elif verdict == "worse" and t.crossed(row["change_pct"]):
                why = f"; {row['bounds']}" if row.get("bounds") else ""
                result.failures.append(
                    f"{where}: {_pct(row['change_pct'])} (p = {row['p_value']:.3f}), "
                    f"beyond {t.text}{why}"
                )
            else:
                result.passed.append(f"{where}: {verdict} {_pct(row['change_pct'])}")
    if result.failures:
        result.status = FAIL
    elif result.inconclusive:
        result.status = INCONCLUSIVE
    return result


# -- text forms --------------------------------------------------------------------------------
def _num(v: Optional[float]) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if abs(v) >= 1000:
        return f"{v:,.0f}".replace(",", " ")
    return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"


def _ci(row) -> str:
    lo, hi, level = row["ci_low_pct"], row["ci_high_pct"], row["ci_level"]
    if lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return ""
    return f"[{lo:+.1f}, {hi:+.1f}] % ({100 * level:.0f} %)"


def _verdict(row) -> str:
    v = row["verdict"]
    if v in ("better", "worse"):
        return f"{v} (p={row['p_value']:.3f})"
    return v


HEADER = [
    "Cell",
    "Metric",
    "base",
    "new",
    "change",
    "interval of the change",
    "n",
    "verdict",
    "flags",
]


def _lower(row, side: str) -> str:
    """'≥ ' before a side's median when it is a lower bound (the bounds note names the side)."""
    bounds = row.get("bounds") or ""
    return "≥ " if bounds.startswith("both") or bounds.startswith(f"{side} ") else ""


def rows_text(frame) -> list[list[str]]:
    out = []
    for r in frame.to_dict("records"):
        notes = [
            n
            for n in (
                r["flags"] or "",
                r.get("bounds") or "",
                r["note"] if r["note"] and r["verdict"] != "too few repeats" else "",
            )
            if n
        ]
        out.append(
            [
                _cell(r),
                r["label"],
                _lower(r, "base") + _num(r["base"]),
                _lower(r, "new") + _num(r["new"]),
                _pct(r["change_pct"]),
                _ci(r),
                f"{r['n_base']}+{r['n_new']}",
                _verdict(r),
                "; ".join(notes),
            ]
        )
    return out


def _gate_lines(gate: Optional[GateResult]) -> list[str]:
    if gate is None or not gate.thresholds:
        return []
    lines = [f"Gate {' '.join(gate.thresholds)}: {gate.word}"]
    lines += [f"  FAIL  {x}" for x in gate.failures]
    lines += [f"  ?     {x}" for x in gate.inconclusive]
    return lines


LEGEND = (
    "median of repeats per side; change = (new - base) / base; interval: Hodges-Lehmann, exact "
    "coverage in brackets; ~ = no significant difference (exact Mann-Whitney U, p >= 0.05); ≥ = a "
    "lower bound (generator-bound: the server did at least this); uncertain = a significant change a lower "
    "bound leaves open"
)


def format_table(frame, gate: Optional[GateResult] = None) -> str:
    rows = [HEADER] + rows_text(frame)
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines + ["", LEGEND] + _gate_lines(gate)) + "\n"


def format_markdown(frame, gate: Optional[GateResult] = None) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows_text(frame)]
    gate_lines = _gate_lines(gate)
    if gate_lines:
        lines += ["", f"**{gate_lines[0]}**"] + (
            [""] + [f"- {x.strip()}" for x in gate_lines[1:]] if gate_lines[1:] else []
        )
    return "\n".join(lines + ["", f"({LEGEND})"]) + "\n"


def format_json(frame, gate: Optional[GateResult] = None) -> str:
    rows = [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        for r in frame.to_dict("records")
    ]
    return (
        json.dumps({"rows": rows, "gate": asdict(gate) if gate else None}, indent=2, default=str)
        + "\n"
    )


FORMATS = {"table": format_table, "markdown": format_markdown, "json": format_json}
