"""Capacity under service-level objectives: the highest open-loop rate at which a server still
meets them, found by measuring, never guessed.

    found = capacity("http://127.0.0.1:8080/plaintext", slo=["p99<10ms"], connections=25)
    found.capacity, found.first_failing, found.failing_objective, found.steps

The search (each step an open-loop run: constant or Poisson arrivals, latency corrected for
coordinated omission, ``settle`` seconds of warm-up then ``step`` seconds judged):
  1. start from ``start`` req/s, or half of what a short closed-loop probe reached;
  2. rise geometrically (x ``growth``) while the steps pass, fall while they fail, until one
     passing and one failing rate bracket the capacity;
  3. bisect until the bracket is within ``precision`` of the failing rate;
  4. run the highest passing rate ``repeats`` more times: a rate that passes only sometimes is
     not the capacity - the search goes on below it (a server near saturation passes or fails
     by the luck of its transients: its capacity under the objective is where it passes every
     time). The step budget (``max_steps``) ends a search that never settles: "unstable".

A step passes when every objective holds over the whole step and over every ``window`` inside
it (objectives.judge), and the generator sent at least 99 % of the requests due.

The generator is never mistaken for the server. A step is generator-bound when the generator's
threads were saturated, or when requests left late (send lateness p99 above ``max_lateness``
and above a fifth of the tightest latency objective, so enough to break it on its own) or not
at all while the server answered the sent ones within every latency objective (the delay was
before the send: our CPU, or a connection pool too small for the rate). Such a step
ends the search with "generator-bound", and the only claim is the highest passing rate as a
lower bound - never a capacity figure. The pool grows (``max_connections``, by default twice
what Little's law needs at the rate and the loosest latency limit), so a server that meets the
objectives never waits for a connection.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

from ..core import analysis
from ..core.errors import ConfigError
from ..core.result import Result
from ..core.run import OPTION_NAMES, run
from .objectives import Objective, Verdict, bad_share, judge, parse_objectives

# run options the search sets itself, per step
SEARCH_OWNS = (
    "rate",
    "duration",
    "requests",
    "warmup",
    "interval",
    "rate_schedule",
    "steps",
    "connections_schedule",
)
# a step that sent fewer than this share of its due requests did not run at the asked rate
MIN_SENT_SHARE = 0.99
# the most connections the pool grows to unless max_connections says otherwise
AUTO_POOL_MAX = 1000


@dataclass
class Step:
    """One measured rate."""

    phase: str  # "probe" is not a step; "search" or "confirm"
    rate: float  # asked, req/s
    result: Result
    verdict: Verdict
    # why the generator, not the server, limited this step (None: it did not)
    generator_bound: Optional[str] = None
    # the share of the machine other processes (and the hypervisor) took in the window, when
    # the server was sampled; a contended step was re-run, and is flagged if it stayed so
    outside_share: Optional[float] = None
    contended: bool = False
    reruns: int = 0

    @property
    def passed(self) -> bool:
        return self.verdict.passed and self.generator_bound is None

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
            return "generator-bound"
        return "pass" if self.verdict.passed else f"FAIL {self.verdict.failed_objective}"

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
            "generator_bound": self.generator_bound,
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


@dataclass
class CapacityResult:
    """What the search found, and every step it measured (the raw data of its claim)."""

    url: str
    objectives: list[str]
    settings: dict[str, Any]
    # "capacity": found and confirmed; "generator-bound": the generator, not the server, was the
    # limit; "below-start": even the lowest rate tried failed; "unstable": the rates near the
    # capacity passed only sometimes; "not-converged": the step budget ran out; "interrupted"
    outcome: str = "not-converged"
    capacity: Optional[float] = None  # the highest rate that passed every time (req/s)
    lower_bound: Optional[float] = None  # the highest rate that passed, when that is all we know
    first_failing: Optional[float] = None  # the lowest rate that failed
    failing_objective: Optional[str] = None
    failures: list[str] = field(default_factory=list)
    probe_rps: Optional[float] = None
    steps: list[Step] = field(default_factory=list)

    def spread(self) -> Optional[dict[str, Any]]:
        """The capacity's confirmation runs: achieved req/s and corrected p99, min/median/max."""
        runs = [s for s in self.steps if s.rate == self.capacity]
        if self.capacity is None or not runs:
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
        if self.outcome == "capacity":
            return (
                f"capacity under {limit}: {_rate(self.capacity)} req/s (passed all "
                f"{sum(1 for s in self.steps if s.rate == self.capacity)} runs at that rate); "
                "the first failing rate was "
                f"{_rate(self.first_failing)} req/s ({self.failing_objective})"
            )
        if self.outcome == "generator-bound":
            step = next(s for s in reversed(self.steps) if s.generator_bound)
            above = (
                f"the server's capacity is above {_rate(self.lower_bound)} req/s, the highest rate "
                "that met every objective"
                if self.lower_bound is not None
                else "no rate was measured that the generator could send on time"
            )
            return (
                f"generator-bound at {_rate(step.rate)} req/s ({step.generator_bound}): {above}; "
                "this generator cannot show how far above - give it more threads or CPUs "
                "(--threads, --cpus), or more connections"
            )
        if self.outcome == "below-start":
            return (
                f"no capacity: every rate tried failed {limit}, down to "
                f"{_rate(self.first_failing)} req/s ({self.failing_objective})"
            )
        if self.outcome == "unstable":
            return (
                f"no stable capacity under {limit}: the rates near "
                f"{_rate(self.lower_bound or 0)} req/s passed only in some runs"
            )
        if self.outcome == "interrupted":
            return "interrupted: the steps measured so far are kept"
        return (
            f"the search did not converge within {self.settings.get('max_steps')} steps "
            f"(between {_rate(self.lower_bound or 0)} and {_rate(self.first_failing or 0)} req/s)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "loadbench-capacity/1",
            "url": self.url,
            "objectives": self.objectives,
            "settings": self.settings,
            "outcome": self.outcome,
            "message": self.message(),
            "capacity": self.capacity,
            "lower_bound": self.lower_bound,
            "first_failing": self.first_failing,
            "failing_objective": self.failing_objective,
            "failures": self.failures,
            "spread": self.spread(),
            "probe_rps": self.probe_rps,
            "steps": [s.to_dict() for s in self.steps],
        }

    def to_json(self, path: Union[str, Path, None] = None) -> str:
        text = json.dumps(self.to_dict(), indent=2, default=_plain)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text

    def table_lines(self) -> list[str]:
        """Every step as a row: asked and achieved rate, corrected and uncorrected latency,
        errors, server CPU, the verdict."""
        head = (
            f"{'#':>3} {'phase':<8} {'asked/s':>10} {'sent/s':>10} {'p50 ms':>8} {'p99 ms':>8} "
            f"{'p99.9 ms':>9} {'max ms':>8} {'p99 unc.':>8} {'errors':>7} {'srv us/req':>10} "
            f"{'srv cores':>9}  outcome"
        )
        lines = [head]
        for i, s in enumerate(self.steps, 1):
            c, u = s.latency_ms(), s.latency_ms(uncorrected=True)

            def ms(d: dict, k: str) -> str:
                return f"{d[k]:.3g}" if k in d else "-"

            cpu, util = s.server_cpu_us_per_req, s.server_utilisation
            lines.append(
                f"{i:>3} {s.phase:<8} {s.rate:>10,.0f} {s.achieved:>10,.0f} {ms(c, 'p50'):>8} "
                f"{ms(c, 'p99'):>8} {ms(c, 'p99.9'):>9} {ms(c, 'max'):>8} {ms(u, 'p99'):>8} "
                f"{100 * bad_share(s.result):>6.2f}% {('-' if cpu is None else f'{cpu:.1f}'):>10} "
                f"{('-' if util is None else f'{util:.2f}'):>9}  {s.outcome}".replace(",", " ")
            )
        return lines


def _rate(value: float) -> str:
    """12 345 (req/s): thousands separated by a space, as every report writes them."""
    return f"{value:,.0f}".replace(",", " ")


def _plain(value: Any) -> Any:
    """JSON for the numpy scalars a Result's blocks may hold."""
    return float(value)


def _generator_bound(result: Result, objectives: Sequence[Objective], max_lateness_us: float):
    """Why the generator, not the server, limited a run (None: it did not)."""
    if result.saturated:
        return f"its threads were {100 * result.cpu_utilisation:.0f} % busy"
    service = result.latency_uncorrected  # from the actual send: the server's own latency
    service_ok = service is None or all(
        (v := o.latency_us(service)) is None or v < o.limit for o in objectives if o.is_latency
    )
    if not service_ok:
        return None  # the server itself answered too slowly: its limit
    late = (
        result.lateness.percentile(99)
        if result.lateness is not None and result.lateness.count
        else 0.0
    )
    # lateness too small to break an objective on its own (a fifth of the tightest limit) is
    # not the reason a step failed: a loaded VM delays sends by a few ms now and then
    tightest = min((o.limit for o in objectives if o.is_latency), default=math.inf)
    if late > max(max_lateness_us, tightest / 5):
        return (
            f"sends were late (lateness p99 {late / 1000:.3g} ms) while the server answered "
            "within the objectives"
        )
    if result.due and result.sends < MIN_SENT_SHARE * result.due:
        return (
            f"it sent {100 * result.sends / result.due:.1f} % of the due requests while the "
            "server answered within the objectives"
        )
    return None


def capacity(
    url: str,
    slo: Union[str, Sequence[str]],
    *,
    start: Optional[float] = None,
    step: float = 5.0,
    settle: float = 1.0,
    window: float = 1.0,
    precision: float = 0.02,
    repeats: int = 3,
    growth: float = 2.0,
    max_lateness: float = 1e-3,
    max_steps: int = 40,
    probe: float = 2.0,
    min_rate: float = 1.0,
    contended_share: float = analysis.CONTENDED_SHARE,
    contended_reruns: int = 2,
    sample_pid: Optional[int] = None,
    on_step: Optional[Callable[[Step], None]] = None,
    **run_options: Any,
) -> CapacityResult:
    """Search the highest rate at which ``url`` meets every objective of ``slo`` ("p99<10ms",
    a list of such strings, or one comma-separated string). The other keywords are
    :func:`loadbench.run`'s (connections, threads, cpus, protocol, streams, headers, ...),
    applied to every step; ``sample_pid`` adds the server's CPU per request and utilisation.
    ``on_step`` is called after each step (the CLI prints it). With ``sample_pid``, a step
    during which other processes took more than ``contended_share`` of the machine is measured
    again (up to ``contended_reruns`` times), and flagged contended if it stays so."""
    objectives = parse_objectives([slo] if isinstance(slo, str) else list(slo))
    for name in run_options:
        if name not in OPTION_NAMES:
            raise TypeError(f"capacity() got an unexpected keyword argument {name!r}")
        if name in SEARCH_OWNS:
            raise ConfigError(
                f"capacity() sets {name} for every step itself: use start, step, settle or window"
            )
    checks = {
        "step": step > 0,
        "settle": settle >= 0,
        "window": 0 < window <= step,
        "precision": 0 < precision < 1,
        "repeats": isinstance(repeats, int) and repeats >= 0,
        "growth": growth > 1,
        "max_lateness": max_lateness > 0,
        "max_steps": isinstance(max_steps, int) and max_steps >= 2,
        "start": start is None or start > 0,
        "min_rate": min_rate > 0,
        "contended_share": 0 < contended_share <= 1,
        "contended_reruns": isinstance(contended_reruns, int) and contended_reruns >= 0,
        "probe": probe > 0,
    }
    for name, ok in checks.items():
        if not ok:
            raise ConfigError(f"capacity: {name} = {locals()[name]!r} is out of range")
    connections = int(run_options.get("connections", 25))
    run_options["connections"] = connections
    loosest = max((o.limit for o in objectives if o.is_latency), default=1e6) / 1e6
    found = CapacityResult(
        url,
        [o.text for o in objectives],
        {
            "start": start,
            "step_s": step,
            "settle_s": settle,
            "window_s": window,
            "precision": precision,
            "repeats": repeats,
            "growth": growth,
            "max_lateness_s": max_lateness,
            "max_steps": max_steps,
            "connections": connections,
            "max_connections": run_options.get("max_connections"),
            "arrival": run_options.get("arrival", "constant"),
        },
    )

    def measure(rate: float, phase: str) -> Step:
        # Little's law: a server meeting the objectives has at most rate x limit in flight;
        # twice that, so it never waits for a connection (at most AUTO_POOL_MAX)
        pool = run_options.get("max_connections") or max(
            connections, min(math.ceil(2 * rate * loosest), AUTO_POOL_MAX)
        )
        options = {**run_options, "max_connections": pool}
        reruns = 0
        while True:
            result = run(
                url,
                rate=rate,
                duration=step,
                warmup=settle,
                interval=window,
                sample_pid=sample_pid,
                **options,
            )
            # other processes' CPU in the window, read with the server's (sample_pid only)
            outside = analysis.outside_share(result.extras.get("server") or {}, os.cpu_count())
            quiet = outside is None or outside <= contended_share
            if quiet or result.interrupted or reruns >= contended_reruns:
                break
            reruns += 1
        verdict = judge(result, objectives, window)
        sent_ok = not result.due or result.sends >= MIN_SENT_SHARE * result.due
        if verdict.passed and not sent_ok:
            verdict = Verdict(
                False,
                [f"sent {100 * result.sends / result.due:.1f} % of the due requests"],
                objectives[0].text,
                verdict.windows,
            )
        bound = None
        if not verdict.passed or result.saturated:
            bound = _generator_bound(result, objectives, max_lateness * 1e6)
            if verdict.passed and bound and sent_ok:
                bound = None  # it met every objective at the asked rate: a pass is a pass
        s = Step(phase, rate, result, verdict, bound, outside, not quiet, reruns)
        found.steps.append(s)
        if on_step is not None:
            on_step(s)
        return s

    if start is None:
        probed = run(url, duration=probe, warmup=min(settle, 1.0), **run_options)
        found.probe_rps = probed.rps
        if not probed.responses:
            raise ConfigError(
                f"the closed-loop probe of {url} got no response ({probed.first_error or 'no answer'})"
            )
        start = max(min_rate, probed.rps / 2)
    passes: list[float] = []
    lo: Optional[float] = None  # highest passing
    hi: Optional[float] = None  # lowest failing
    rate = float(start)
    unstable_rounds = 0  # confirmations that failed: rates that passed only sometimes
    while len(found.steps) < max_steps:
        s = measure(rate, "search")
        if s.result.interrupted:
            found.outcome = "interrupted"
            break
        if s.generator_bound:
            found.outcome, found.lower_bound = "generator-bound", lo
            break
        if s.passed:
            passes.append(rate)
            lo = rate if lo is None else max(lo, rate)
        else:
            if hi is None or rate < hi:
                hi, found.failing_objective, found.failures = (
                    rate,
                    s.verdict.failed_objective,
                    s.verdict.failures,
                )
        if lo is not None and hi is not None and lo >= hi:
            # a rate passed above one that failed: the failure or the pass was luck, so only
            # the passes below the failure count (the confirmation runs settle it)
            below = [p for p in passes if p < hi]
            lo = max(below) if below else None
        if lo is None:
            rate = rate / growth
            if rate < min_rate:
                found.outcome = "below-start"
                break
            continue
        if hi is None:
            rate = rate * growth
            continue
        if (hi - lo) / hi > precision:
            rate = (lo + hi) / 2
            continue
        # bracketed: confirm the highest passing rate
        stable = True
        for _ in range(repeats):
            c = measure(lo, "confirm")
            if c.result.interrupted:
                found.outcome = "interrupted"
                stable = False
                break
            if c.generator_bound:
                found.outcome, found.lower_bound = "generator-bound", lo
                stable = False
                break
            if not c.passed:
                stable = False
                hi, found.failing_objective, found.failures = (
                    lo,
                    c.verdict.failed_objective,
                    c.verdict.failures,
                )
                break
        if found.outcome in ("interrupted", "generator-bound"):
            break
        if stable:
            found.outcome, found.capacity = "capacity", lo
            break
        # the rate passed only sometimes: not the capacity. The search goes on below it, from
        # the highest rate that passed under it (or lower still), until the step budget ends.
        unstable_rounds += 1
        below = [p for p in passes if p < hi]
        lo = max(below) if below else None
        rate = hi / growth if lo is None else (lo + hi) / 2
    else:
        found.outcome = "unstable" if unstable_rounds else "not-converged"
    if found.outcome not in ("capacity",) and found.lower_bound is None:
        found.lower_bound = lo
    found.first_failing = hi
    return found
