"""One step of a capacity search: an open-loop run at one rate, judged against the objectives,
with who limited it (core/limits.py) beside the verdict.

A step passes when every objective holds over the whole step and over every window inside it
(objectives.judge) and the generator sent at least ``MIN_SENT_SHARE`` of the requests due. A
step that fails is the server's only when the evidence says so - its cores were near
saturation, or its own service latency broke an objective while the generator kept up, or the
generator kept up and the sends were on time; otherwise it is the generator's (its threads
saturated, its loop released sends late - and then it read the responses late too) or the
pool's (sends waited for a free connection while the server had CPU to spare). A step that
failed while other processes took the machine through every re-run (contended) is not the
server's either. Such a step bounds the server's capacity from below; it never counts against
it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from ..core import analysis
from ..core.limits import Limit, limited_by
from ..core.result import Result
from .objectives import Objective, Verdict, bad_share

# a step that sent fewer than this share of its due requests did not run at the asked rate
MIN_SENT_SHARE = 0.99


@dataclass
class Step:
    """One measured rate."""

    phase: str  # "search" or "confirm"
    rate: float  # asked, req/s
    result: Result
    verdict: Verdict
    limit: Limit
    # the share of the machine other processes (and the hypervisor) took in the window, when
    # the server was sampled; a contended step was re-run, and is flagged if it stayed so
    outside_share: Optional[float] = None
    contended: bool = False
    reruns: int = 0

    @property
    def passed(self) -> bool:
        """It met every objective at the asked rate: a pass, whoever was near a limit."""
        return self.verdict.passed

    @property
    def generator_bound(self) -> Optional[str]:
        """Why this step's failure is not the server's - the generator side (its CPU, its loop,
        its pool) was the limit, or other processes took the machine through every re-run - so
        it bounds the capacity from below only (None: it passed, or the failure is the
        server's)."""
        if self.passed or not self.limit.bounded:
            return None
        return self.limit.reason

    @property
    def bound_by(self) -> Optional[str]:
        """ "generator", "pool" or "contended" for a failure that is not the server's, else None."""
        return None if self.generator_bound is None else self.limit.by

    @property
    def achieved(self) -> float:
        """Requests sent per second of the window."""
        return self.result.achieved_rate

    @property
    def sent_share(self) -> float:
        due = self.result.due
        return self.result.sends / due if due else 1.0

    def latency_ms(self, uncorrected: bool = False) -> dict[str, float]:
        hist = self.result.latency_uncorrected if uncorrected else self.result.latency
        if hist is None or not hist.count:
            return {}
        return {
            "p50": hist.percentile(50) / 1000,
            "p99": hist.percentile(99) / 1000,
            "p99.9": hist.percentile(99.9) / 1000,
            "max": hist.max / 1000,
        }

    @property
    def server(self) -> dict:
        return self.result.extras.get("server") or {}

    @property
    def server_cpu_us_per_req(self) -> Optional[float]:
        return self.server.get("cpu_us_per_req")

    @property
    def server_utilisation(self) -> Optional[float]:
        """CPU cores the server's process tree used in the window (1.0 = one core busy)."""
        cpu, window = self.server.get("cpu_s"), self.server.get("window_s")
        return cpu / window if cpu is not None and window else None

    @property
    def outcome(self) -> str:
        if self.generator_bound:
            return "contended" if self.bound_by == "contended" else f"{self.bound_by}-bound"
        return "pass" if self.passed else f"FAIL {self.verdict.failed_objective}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "rate": self.rate,
            "achieved_rate": self.achieved,
            "rps": self.result.rps,
            "passed": self.passed,
            "outcome": self.outcome,
            "failures": self.verdict.failures,
            "windows_judged": self.verdict.windows,
            "windows_merged": self.verdict.merged,
            "generator_bound": self.generator_bound,
            "limit": self.limit.to_dict(),
            "latency_ms": self.latency_ms(),
            "latency_uncorrected_ms": self.latency_ms(uncorrected=True),
            "lateness_p99_ms": (
                self.result.lateness.percentile(99) / 1000
                if self.result.lateness is not None and self.result.lateness.count
                else None
            ),
            "sent_share": self.sent_share,
            "bad_share": bad_share(self.result),
            "server_cpu_us_per_req": self.server_cpu_us_per_req,
            "server_utilisation": self.server_utilisation,
            "outside_share": self.outside_share,
            "contended": self.contended,
            "reruns": self.reruns,
            "result": self.result.to_dict(),
        }


def lateness_tolerance_us(objectives: Sequence[Objective], max_lateness_us: float) -> float:
    """Send lateness (p99) too small to break an objective on its own - a fifth of the tightest
    latency limit, at least ``max_lateness_us`` (a loaded VM delays sends by a few ms now and
    then) - is not a reason a step failed."""
    tightest = min((o.limit for o in objectives if o.is_latency), default=math.inf)
    return max(max_lateness_us, tightest / 5)


def service_broke(result: Result, objectives: Sequence[Objective]) -> bool:
    """The server's own latency - from each request's actual send, the uncorrected histogram -
    broke a latency objective over the step by more than the generator's own loop delay (p99):
    a generator that was behind read the responses late too, but by no more than that."""
    service = result.latency_uncorrected
    if service is None or not service.count:
        return False
    loop = result.loop_lateness
    own_delay = loop.percentile(99) if loop is not None and loop.count else 0.0
    return any(
        (v := o.latency_us(service)) is not None and v - own_delay >= o.limit
        for o in objectives
        if o.is_latency
    )


def verdict_of(result: Result, verdict: Verdict, objectives: Sequence[Objective]) -> Verdict:
    """The objectives' verdict, failed too when the generator sent less than MIN_SENT_SHARE of
    the due requests (the step did not run at its rate)."""
    if verdict.passed and result.due and result.sends < MIN_SENT_SHARE * result.due:
        return Verdict(
            False,
            [f"sent {100 * result.sends / result.due:.1f} % of the due requests"],
            objectives[0].text,
            verdict.windows,
            verdict.merged,
        )
    return verdict


def limit_of(
    result: Result,
    objectives: Sequence[Objective],
    max_lateness_us: float,
    contended_share: float,
) -> Limit:
    """Who limited a step (core/limits.py), with the step's lateness tolerance, its server's own
    latency judged against the objectives and the search's contended share."""
    return limited_by(
        result.to_dict(),
        tolerance_us=lateness_tolerance_us(objectives, max_lateness_us),
        service_broke_objective=service_broke(result, objectives),
        contended_share=contended_share,
    )


def outside_of(result: Result, cores: Optional[int]) -> Optional[float]:
    """Other processes' CPU in the window, read with the server's (sample_pid only)."""
    return analysis.outside_share(result.extras.get("server") or {}, cores)
