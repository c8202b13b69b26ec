"""The A/A check: a server listed twice (SweepPlan.twins: "beast" and "beast-again") is one
binary, so every order the report could state between the two is noise by construction. The
report reads each such pair through the same rule as every other pair (core/figures.compare:
paired within blocks where they ran in blocks) and says whether it held: ≈ in every protocol,
for throughput and for CPU per response. A pair ordered anyway is a sign that the stated
intervals are too tight for this machine, and the report says so in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..core import analysis
from ..core.analysis import Figure
from .model import Model

# what the check compares: (metric, the model's figure for one server and protocol, higher is
# better, how a sentence names it)
METRICS = (("rps", True, "req/s"), ("cpu_us", False, "CPU us/response"))


@dataclass
class TwinVerdict:
    """One pair, one protocol, one metric: the two figures and the rule's verdict."""

    original: str
    twin: str
    protocol: str
    metric: str
    verdict: str  # "noise" (≈, as it must be), "better"/"worse" (twin against original), "open"
    ratio: Optional[Figure]  # twin / original, its interval paired within blocks where it can

    @property
    def held(self) -> bool:
        return self.verdict in ("noise", "open")


def twin_pairs(model: Model) -> list[tuple[str, str]]:
    """(original, twin) for each target the sweep listed twice, both measured."""
    out = []
    for t in model.settings.get("targets") or []:
        if not isinstance(t, dict) or not t.get("twin_of"):
            continue
        if t["twin_of"] in model.listed and t.get("name") in model.listed:
            out.append((t["twin_of"], t["name"]))
    return out


def _figure(model: Model, target: str, protocol: str, metric: str) -> Optional[Figure]:
    if metric == "rps":
        return model.peak(target, protocol)
    return model.best_cpu(target, protocol)


def verdicts(model: Model) -> list[TwinVerdict]:
    """Every pair's verdict per protocol and metric where both have a figure."""
    out = []
    for original, twin in twin_pairs(model):
        for protocol in model.protocols:
            for metric, higher, _ in METRICS:
                a = _figure(model, twin, protocol, metric)
                b = _figure(model, original, protocol, metric)
                if a is None or b is None:
                    continue
                verdict = analysis.compare(a, b, higher)
                out.append(
                    TwinVerdict(
                        original, twin, protocol, metric, verdict, analysis.figure_ratio(a, b)
                    )
                )
    return out


def _ratio_text(ratio: Optional[Figure]) -> str:
    if ratio is None:
        return "n/a"
    low, high = ratio.spread or (float(ratio), float(ratio))
    return f"{float(ratio):.3f} ({low:.3f}-{high:.3f})"


def section(model: Model) -> list[str]:
    """The report's "A/A check" section (empty when the sweep listed no server twice)."""
    found = verdicts(model)
    if not found:
        return []
    failed = [v for v in found if not v.held]
    names = {m: name for m, _, name in METRICS}
    lines = ["## A/A check (a server listed twice)", ""]
    if failed:
        lines.append(
            f"**The check failed in {len(failed)} of {len(found)} comparisons**: one binary was "
            "ordered against itself, so this machine's noise is wider than the intervals say - "
            "read every order in this report with that in mind."
        )
    else:
        lines.append(
            f"Held in all {len(found)} comparisons: each server listed twice reads ≈ itself, "
            "as the intervals promise (paired within blocks, docs/sweeps-and-reports.md)."
        )
    lines += ["", "| pair | protocol | metric | twin / original (95 % interval) | verdict |"]
    lines.append("|---|---|---|---|---|")
    for v in found:
        word = (
            "≈" if v.held else f"ORDERED ({'twin' if v.verdict == 'better' else 'original'} ahead)"
        )
        lines.append(
            f"| {v.twin} / {v.original} | {v.protocol} | {names[v.metric]} | "
            f"{_ratio_text(v.ratio)} | {word} |"
        )
    return lines + [""]
