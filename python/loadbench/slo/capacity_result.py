"""What a capacity search found, and every step it measured (the raw data of its claim).

The answer is an interval where that is all that is known: a capacity found and confirmed
(the highest rate that met every objective in every window, every time it ran, below a rate the
*server* failed); or, when the generator side was the limit, the highest rate it sent on time
and met the objectives at (``lower_bound``, L) with the server's CPU ceiling beside it
(``ceiling``, U: the cores it may use / its least CPU per response over the steps) - the server's capacity
lies in [L, U].
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from ..core import analysis
from .objectives import bad_share
from .step import Step

FORMAT = "loadbench-capacity/2"
# outcomes whose figure is a lower bound, set by the generator side
BOUNDED_OUTCOMES = ("generator-bound", "pool-bound", "contended")


@dataclass
class CapacityResult:
    """What the search found, and every step it measured."""

    url: str
    objectives: list[str]
    settings: dict[str, Any]
    # "capacity": found and confirmed; "generator-bound" / "pool-bound" / "contended": the
    # generator's CPU or loop / its connection pool / other processes, not the server, failed
    # the rate above lower_bound;
    # "below-start": even the lowest rate tried failed; "unstable": the rates near the capacity
    # passed only sometimes; "not-converged": the step budget ran out; "interrupted"; "stopped":
    # a step could not be judged (stopped_by says why; lower_bound is the highest rate passed)
    outcome: str = "not-converged"
    stopped_by: Optional[str] = None
    capacity: Optional[float] = None  # the highest rate that passed every time (req/s)
    lower_bound: Optional[float] = None  # the highest rate that passed, when that is all we know
    ceiling: Optional[float] = None  # the server's CPU ceiling at its least CPU per response
    first_failing: Optional[float] = None  # the lowest rate the server failed
    first_bound: Optional[float] = None  # the lowest rate the generator side failed
    failing_objective: Optional[str] = None
    failures: list[str] = field(default_factory=list)
    probe_rps: Optional[float] = None
    settling: Optional[dict[str, Any]] = None  # how the server was brought to steady state
    steps: list[Step] = field(default_factory=list)

    @property
    def interval(self) -> Optional[tuple[Optional[float], Optional[float]]]:
        """[L, U]: what is known of the server's capacity. Found: [capacity, first failing);
        generator-side bound: [lower_bound, the lower of its CPU ceiling and the rate the server
        itself failed] (U None when neither is known)."""
        if self.outcome == "capacity":
            return self.capacity, self.first_failing
        if self.lower_bound is not None:
            # the server failed a rate too (its own failure, above the generator's reach): the
            # capacity is below that, whatever its CPU ceiling says
            tops = [u for u in (self.ceiling, self.first_failing) if u is not None]
            return self.lower_bound, (min(tops) if tops else None)
        return None

    def spread(self) -> Optional[dict[str, Any]]:
        """The answer's confirmation runs: achieved req/s and corrected p99, min/median/max."""
        rate = self.capacity if self.capacity is not None else self.lower_bound
        runs = [s for s in self.steps if s.rate == rate]
        if rate is None or not runs:
            return None
        achieved = analysis.median_spread([s.achieved for s in runs])
        p99 = analysis.median_spread([s.latency_ms().get("p99") for s in runs])
        return {
            "runs": len(runs),
            "passed": sum(1 for s in runs if s.passed),
            "achieved_rate": None if achieved is None else asdict(achieved),
            "p99_ms": None if p99 is None else asdict(p99),
        }

    def message(self) -> str:
        """One sentence: the answer, or why there is none (and a warning for contended steps)."""
        contended = sum(1 for s in self.steps if s.contended)
        text = self._answer()
        if contended:
            text += (
                f" - WARNING: {contended} of {len(self.steps)} steps were contended (other "
                "processes took a share of the machine even after re-runs): do not trust it"
            )
        return text

    def _answer(self) -> str:
        limit = " and ".join(self.objectives)
        ceiling = (
            f"; the server's CPU ceiling there is {rate_text(self.ceiling)} req/s"
            if self.ceiling
            else ""
        )
        if self.outcome == "capacity":
            return (
                f"capacity under {limit}: {rate_text(self.capacity)} req/s (passed all "
                f"{sum(1 for s in self.steps if s.rate == self.capacity)} runs at that rate); "
                f"the first failing rate was {rate_text(self.first_failing)} req/s "
                f"({self.failing_objective})"
            )
        if self.outcome in BOUNDED_OUTCOMES:
            step = min((s for s in self.steps if s.generator_bound), key=lambda s: s.rate)
            if self.lower_bound is None:
                return (
                    f"{self.outcome} at {rate_text(step.rate)} req/s ({step.generator_bound}): "
                    "no rate was measured that the generator could send on time"
                )
            if self.outcome == "contended":
                return (
                    f"contended: the server met {limit} at {rate_text(self.lower_bound)} req/s; "
                    f"at {rate_text(self.first_bound)} req/s {step.generator_bound}, so its "
                    f"capacity is at least that{ceiling} - measure it on a quiet machine"
                )
            failed = (
                f", and below {rate_text(self.first_failing)} req/s, where it failed on its own "
                f"({self.failing_objective})"
                if self.first_failing is not None
                else ""
            )
            return (
                f"{self.outcome}: the server met {limit} at {rate_text(self.lower_bound)} req/s, "
                f"the most this generator sent on time (at {rate_text(self.first_bound)} req/s "
                f"{step.generator_bound}), so its capacity is at least that{failed}{ceiling} - "
                "give the generator more threads or CPUs (--threads, --cpus) or connections to "
                "see further"
            )
        if self.outcome == "below-start":
            return (
                f"no capacity: every rate tried failed {limit}, down to "
                f"{rate_text(self.first_failing)} req/s ({self.failing_objective})"
            )
        if self.outcome == "unstable":
            return (
                f"no stable capacity under {limit}: the rates near "
                f"{rate_text(self.lower_bound or 0)} req/s passed only in some runs"
            )
        if self.outcome == "interrupted":
            return "interrupted: the steps measured so far are kept"
        if self.outcome == "stopped":
            return f"stopped: {self.stopped_by}; the steps measured so far are kept"
        return (
            f"the search did not converge within {self.settings.get('max_steps')} steps "
            f"(between {rate_text(self.lower_bound or 0)} and "
            f"{rate_text(self.first_failing or self.first_bound or 0)} req/s)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "url": self.url,
            "objectives": self.objectives,
            "settings": self.settings,
            "outcome": self.outcome,
            "stopped_by": self.stopped_by,
            "message": self.message(),
            "capacity": self.capacity,
            "lower_bound": self.lower_bound,
            "ceiling": self.ceiling,
            "interval": list(self.interval) if self.interval else None,
            "first_failing": self.first_failing,
            "first_bound": self.first_bound,
            "failing_objective": self.failing_objective,
            "failures": self.failures,
            "spread": self.spread(),
            "probe_rps": self.probe_rps,
            "settling": self.settling,
            "steps": [s.to_dict() for s in self.steps],
        }

    def to_json(self, path: Union[str, Path, None] = None) -> str:
        text = json.dumps(self.to_dict(), indent=2, default=_plain)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text

    def table_lines(self) -> list[str]:
        """Every step as a row: asked and achieved rate, corrected and uncorrected latency,
        errors, server CPU, who limited it, the verdict."""
        head = (
            f"{'#':>3} {'phase':<8} {'asked/s':>10} {'sent/s':>10} {'p50 ms':>8} {'p99 ms':>8} "
            f"{'p99.9 ms':>9} {'max ms':>8} {'p99 unc.':>8} {'errors':>7} {'srv us/req':>10} "
            f"{'srv cores':>9} {'gen busy':>8}  outcome"
        )
        lines = [head]
        for i, s in enumerate(self.steps, 1):
            c, u = s.latency_ms(), s.latency_ms(uncorrected=True)

            def ms(d: dict, k: str) -> str:
                return f"{d[k]:.3g}" if k in d else "-"

            cpu, util = s.server_cpu_us_per_req, s.server_utilisation
            gen = s.limit.generator_busy
            lines.append(
                f"{i:>3} {s.phase:<8} {s.rate:>10,.0f} {s.achieved:>10,.0f} {ms(c, 'p50'):>8} "
                f"{ms(c, 'p99'):>8} {ms(c, 'p99.9'):>9} {ms(c, 'max'):>8} {ms(u, 'p99'):>8} "
                f"{100 * bad_share(s.result):>6.2f}% {('-' if cpu is None else f'{cpu:.1f}'):>10} "
                f"{('-' if util is None else f'{util:.2f}'):>9} "
                f"{('-' if gen is None else f'{100 * gen:.0f}%'):>8}  {s.outcome}".replace(",", " ")
            )
        return lines


def rate_text(value: Optional[float]) -> str:
    """12 345 (req/s): thousands separated by a space, as every report writes them."""
    return "?" if value is None else f"{value:,.0f}".replace(",", " ")


def _plain(value: Any) -> Any:
    """JSON for the numpy scalars a Result's blocks may hold."""
    return float(value)
