"""Service-level objectives - `p99<10ms`, `p99.9<50ms`, `mean<2ms`, `max<100ms`, `errors<0.1%` -
and how one open-loop run is judged against them.

A latency objective reads the run's corrected histogram (from each request's intended send
time, so a stall is charged to every request it delayed), over the whole step and over every
window inside it (the timeline's per-interval histograms): a step that passes on average but
breaks for a second fails. The errors objective counts transport errors, non-2xx answers and
requests left without an outcome, over all outcomes (the share the report marks ✗); per window
it counts the transport errors the timeline keeps per interval.

    objectives = parse_objectives(["p99<10ms", "errors<0.1%"])
    verdict = judge(result, objectives, window_s=1.0)
    verdict.passed, verdict.failures   # ["p99 12.4 ms >= 10 ms in the window at 3-4 s", ...]
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from ..core import analysis
from ..core.errors import ConfigError
from ..core.result import LatencyHistogram, Result

_OBJECTIVE = re.compile(
    r"^\s*(?P<metric>p\d+(?:\.\d+)?|mean|max|errors)\s*<\s*(?P<value>\d+(?:\.\d+)?)\s*"
    r"(?P<unit>us|ms|s|%)\s*$"
)
_TIME_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6}
# a window shorter than this share of --slo-window (the run's last, cut by the window's end)
# holds too few requests to judge: it is not judged on its own (the whole step still is)
MIN_WINDOW_SHARE = 0.5


@dataclass(frozen=True)
class Objective:
    """``metric`` below ``limit``: a latency percentile ("p99"), "mean" or "max" in
    microseconds, or "errors" as a share of outcomes (0.001 = 0.1 %)."""

    metric: str
    limit: float
    text: str

    @property
    def is_latency(self) -> bool:
        return self.metric != "errors"

    def latency_us(self, hist: LatencyHistogram) -> Optional[float]:
        """The histogram's figure for this objective (None: no request in it)."""
        if not hist.count:
            return None
        if self.metric == "mean":
            return hist.mean
        if self.metric == "max":
            return float(hist.max)
        return hist.percentile(float(self.metric[1:]))

    def show(self, value: float) -> str:
        """'12.4 ms' / '0.35 %': a measured value in the objective's own unit."""
        if not self.is_latency:
            return f"{100 * value:.3g} %"
        return f"{value / 1000:.3g} ms"


def parse_objective(text: str) -> Objective:
    m = _OBJECTIVE.match(str(text))
    if not m:
        raise ConfigError(
            f"bad objective {text!r}: use e.g. 'p99<10ms', 'p99.9<50ms', 'mean<2ms', "
            "'max<100ms' or 'errors<0.1%'"
        )
    metric, value, unit = m.group("metric"), float(m.group("value")), m.group("unit")
    if metric == "errors":
        if unit != "%":
            raise ConfigError(f"bad objective {text!r}: the errors objective is a percentage")
        if not 0 <= value < 100:
            raise ConfigError(f"bad objective {text!r}: the error share must be in [0, 100) %")
        return Objective(metric, value / 100.0, text.strip())
    if unit == "%":
        raise ConfigError(f"bad objective {text!r}: a latency objective needs us, ms or s")
    if metric.startswith("p") and not 0 < float(metric[1:]) < 100:
        raise ConfigError(f"bad objective {text!r}: a percentile is between p0 and p100")
    if value <= 0:
        raise ConfigError(f"bad objective {text!r}: the limit must be above 0")
    return Objective(metric, value * _TIME_UNITS[unit], text.strip())


def parse_objectives(texts: Sequence[str]) -> list[Objective]:
    """The objectives of ``texts`` (each one string, or several separated by commas)."""
    out: list[Objective] = []
    for text in texts:
        out += [parse_objective(part) for part in str(text).split(",") if part.strip()]
    if not out:
        raise ConfigError("give at least one objective, e.g. --slo 'p99<10ms'")
    metrics = [o.metric for o in out]
    if len(set(metrics)) != len(metrics):
        raise ConfigError(f"one objective per metric: {', '.join(o.text for o in out)}")
    return out


@dataclass
class Verdict:
    """How one run fared: ``failures`` says which objective broke, by how much and where."""

    passed: bool
    failures: list[str] = field(default_factory=list)
    # the first objective that failed (its text), for the search's "first failing rate"
    failed_objective: Optional[str] = None
    windows: int = 0  # windows judged
    # windows judged together with their neighbours because alone they held too few requests
    # for the tightest percentile (min_samples): 0 when every window was judged on its own
    merged: int = 0


def bad_share(result: Result) -> float:
    """Transport errors, non-2xx answers and unfinished requests over every outcome."""
    non2xx = analysis.non_2xx({str(k): v for k, v in result.status_codes.items()})
    bad = result.error_count + non2xx + int(result.unfinished)
    outcomes = result.responses + result.error_count + int(result.unfinished)
    return bad / outcomes if outcomes else 0.0


def min_samples(objective: Objective) -> int:
    """Requests a window needs before its figure for ``objective`` means something: ten beyond
    the percentile (p99: 1 000 - its p99 is then the 10th-worst request, not the one stall that
    happened to land there; p99.9: 10 000); 1 for mean, max and errors."""
    if not objective.metric.startswith("p"):
        return 1
    q = float(objective.metric[1:])
    return math.ceil(10 / (1 - q / 100) - 1e-9)


def _groups(counts: Sequence[int], lengths: Sequence[float], window_s: float, need: int):
    """Consecutive windows judged together: each group holds at least ``need`` requests (a window
    that alone holds enough is its own group); a short tail joins the group before it. Windows
    shorter than MIN_WINDOW_SHARE of ``window_s`` (the run's last, cut by its end) join their
    neighbour too."""
    groups: list[list[int]] = []
    current: list[int] = []
    held = 0
    for i, n in enumerate(counts):
        current.append(i)
        held += int(n)
        if held >= need and sum(lengths[j] for j in current) >= MIN_WINDOW_SHARE * window_s:
            groups.append(current)
            current, held = [], 0
    if current:
        if groups:
            groups[-1].extend(current)
        else:
            groups.append(current)
    return groups


def judge(result: Result, objectives: Sequence[Objective], window_s: float) -> Verdict:
    """``result`` (an open-loop run whose timeline interval is ``window_s``) against every
    objective, over the whole run and over each window of it; windows with too few requests for
    the tightest percentile (min_samples) are judged together with their neighbours."""
    failures: list[str] = []
    failed: Optional[str] = None

    def fail(o: Objective, text: str) -> None:
        nonlocal failed
        failures.append(text)
        failed = failed or o.text

    outcomes = result.responses + result.error_count + int(result.unfinished)
    if outcomes == 0:
        return Verdict(False, ["no request got an answer"], objectives[0].text)
    for o in objectives:
        value = bad_share(result) if not o.is_latency else o.latency_us(result.latency)
        if value is not None and value >= o.limit:
            fail(
                o, f"{o.metric} {o.show(value)} >= {o.text.split('<', 1)[1].strip()} over the step"
            )
    windows = result.interval_histograms() or []
    rows = result.timeline_arrays()
    lengths = [
        float(rows["interval_s"][i]) if i < len(rows["interval_s"]) else 0.0
        for i in range(len(windows))
    ]
    need = max(min_samples(o) for o in objectives)
    groups = _groups([h.count for h in windows], lengths, window_s, need)
    if len(groups) == 1 and len(windows) > 1 and windows and sum(h.count for h in windows) < need:
        groups = []  # too few requests in the whole step for any window: the step's figure stands
    judged = 0
    for group in groups:
        length = sum(lengths[i] for i in group)
        if length < MIN_WINDOW_SHARE * window_s:
            continue
        judged += 1
        hist = windows[group[0]] if len(group) == 1 else _added([windows[i] for i in group])
        start = float(rows["t_s"][group[0]])
        where = f"in the window at {start:g}-{start + length:g} s"
        for o in objectives:
            if o.is_latency:
                value = o.latency_us(hist)
                if value is None:  # requests were due, none was answered: a stall, not a pass
                    fail(o, f"{o.metric}: no response {where}")
                    continue
            else:
                answered = sum(int(rows["responses"][i]) + int(rows["errors"][i]) for i in group)
                value = sum(int(rows["errors"][i]) for i in group) / answered if answered else None
            if value is not None and value >= o.limit:
                fail(o, f"{o.metric} {o.show(value)} >= {o.text.split('<', 1)[1].strip()} {where}")
    merged = sum(len(g) - 1 for g in groups)
    return Verdict(not failures, failures, failed, judged, merged)


def _added(histograms: Sequence[LatencyHistogram]) -> LatencyHistogram:
    """Windows' histograms (one layout) added bucket by bucket."""
    first = histograms[0]
    counts = np.sum([h.counts for h in histograms], axis=0)
    out = LatencyHistogram(counts, first.lowest, first.highest, first.significant_figures)
    nz = np.flatnonzero(counts)
    if len(nz):
        out.min_us = min(h.min_us for h in histograms if h.count)
        out.max_us = max(h.max_us for h in histograms if h.count)
    return out
