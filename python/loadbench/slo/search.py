"""Capacity under service-level objectives: the highest open-loop rate at which a server still
meets them, found by measuring, never guessed.

    found = capacity("http://127.0.0.1:8080/plaintext", slo=["p99<10ms"], connections=25)
    found.capacity, found.interval, found.first_failing, found.steps

The search (each step an open-loop run - constant or Poisson arrivals, latency corrected for
coordinated omission, ``settle`` seconds of warm-up then ``step`` seconds judged - on a pool
that is connected before its schedule starts):
  0. bring the server to steady state (core/steady.py: closed-loop rounds until req/s stops
     climbing, at least ``probe`` seconds) and start from ``start`` req/s or half of that steady
     throughput - never from a cold JIT's first second;
  1. rise geometrically (x ``growth``) while the steps pass, fall while they fail, until a
     passing rate and a failing one bracket the answer;
  2. bisect until the bracket is within ``precision`` of its top;
  3. run the highest passing rate ``repeats`` more times, each for ``hold`` seconds (by default
     ``step``): a rate that passes only sometimes, or only for a short step, is not the
     capacity - the search goes on below it. The step budget (``max_steps``) ends a search that
     never settles: "unstable". (Nighthawk's adaptive load controller ends the same way: short
     adjusting stages, then a longer testing stage at the rate they found.)

Who failed a step decides what its failure means (slo/step.py, core/limits.py). A failure that
is the server's (its cores near saturation, its own latency broke the objective, or the sends
were on time) bounds the capacity from above. A failure that is the generator's (its CPU or its
loop) or its pool's bounds nothing about the server: the search bisects below it to the highest
rate the generator drives on time and ends "generator-bound" (or "pool-bound") with that rate as
a lower bound L and the server's CPU ceiling U beside it - [L, U] - never a capacity figure.
Each step's pool is sized before it from Little's law at its rate and the loosest latency
objective (else the server's own peak latency, ``peak``) and not grown while it is judged
(slo/pool.py: the rule a sweep's open-loop cells share).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, Sequence, Union

from ..core import analysis
from ..core.errors import ConfigError, LoadbenchError
from ..core.result import Result
from ..core.run import OPTION_NAMES, run
from ..core.steady import settle as settle_server
from .capacity_result import CapacityResult
from .objectives import Objective, judge, parse_objectives
from .pool import MOST, presized_pool
from .step import Step, limit_of, outside_of, verdict_of

__all__ = ["AUTO_POOL_MAX", "SEARCH_OWNS", "CapacityResult", "Step", "capacity"]

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
# the most connections a step's pool is sized to (slo/pool.py)
AUTO_POOL_MAX = MOST
# after a generator-bound step, the next rate is at most this share of what it did answer
BOUND_BACKOFF = 0.9


class _Bracket:
    """What the steps have shown so far: the passing rates, the lowest rate the server failed
    (``hi``) and the lowest the generator side failed (``ghi``)."""

    def __init__(self) -> None:
        self.passes: list[float] = []
        self.hi: Optional[float] = None
        self.ghi: Optional[float] = None

    @property
    def top(self) -> Optional[float]:
        """The lowest failing rate, whoever failed it."""
        tops = [r for r in (self.hi, self.ghi) if r is not None]
        return min(tops) if tops else None

    @property
    def lo(self) -> Optional[float]:
        """The highest passing rate below every failure (a pass above a failure was luck, or
        the failure was: the confirmations settle it)."""
        top = self.top
        below = [p for p in self.passes if top is None or p < top]
        return max(below) if below else None

    def record(self, s: Step) -> None:
        if s.passed:
            self.passes.append(s.rate)
        elif s.generator_bound:
            self.ghi = s.rate if self.ghi is None else min(self.ghi, s.rate)
        else:
            self.hi = s.rate if self.hi is None else min(self.hi, s.rate)


def _checked_settings(run_options: dict, checks: dict) -> None:
    for name in run_options:
        if name not in OPTION_NAMES:
            raise TypeError(f"capacity() got an unexpected keyword argument {name!r}")
        if name in SEARCH_OWNS:
            raise ConfigError(
                f"capacity() sets {name} for every step itself: use start, step, hold, settle or window"
            )
    for name, (ok, value) in checks.items():
        if not ok:
            raise ConfigError(f"capacity: {name} = {value!r} is out of range")


# The open loop's send batch in a search, unless given: 1/50 of the tightest latency objective,
# at most 100 us (issue 45's tick). The lateness it adds stays negligible against what is
# judged, and at 20 000-50 000 req/s it takes a third to two thirds of the generator's wake-ups
# away against the 40 us a bare run keeps (reports/generator-open-loop-send-batch-100us.md) -
# the generator's CPU is what a fast server's capacity runs into on a machine its size.
MAX_SEND_BATCH_S = 100e-6


class _StepNotJudged(LoadbenchError):
    """A step whose run sent only part of its rate (a shard's worker lost): the search stops."""


def search_send_batch(objectives: Sequence[Objective]) -> float:
    """Seconds the search's open loop may hold a due send for the ones due after it."""
    tightest = min((o.limit for o in objectives if o.is_latency), default=None)
    return MAX_SEND_BATCH_S if tightest is None else min(MAX_SEND_BATCH_S, tightest / 50 / 1e6)


def capacity(
    url: str,
    slo: Union[str, Sequence[str]],
    *,
    start: Optional[float] = None,
    step: float = 5.0,
    hold: Optional[float] = None,
    settle: float = 1.0,
    window: float = 1.0,
    precision: float = 0.02,
    repeats: int = 3,
    growth: float = 2.0,
    max_lateness: float = 1e-3,
    max_steps: int = 40,
    probe: float = 2.0,
    peak: Optional[float] = None,
    min_rate: float = 1.0,
    contended_share: float = analysis.CONTENDED_SHARE,
    contended_reruns: int = 2,
    sample_pid: Optional[int] = None,
    on_step: Optional[Callable[[Step], None]] = None,
    runner: Optional[Callable[..., Result]] = None,
    **run_options: Any,
) -> CapacityResult:
    """Search the highest rate at which ``url`` meets every objective of ``slo`` ("p99<10ms",
    a list of such strings, or one comma-separated string). The other keywords are
    :func:`loadbench.run`'s (connections, threads, cpus, protocol, streams, headers, ...),
    applied to every step; ``sample_pid`` adds the server's CPU per request, its utilisation and
    its CPU ceiling. ``on_step`` is called after each step (the CLI prints it). With
    ``sample_pid``, a step during which other processes took more than ``contended_share`` of
    the machine is measured again (up to ``contended_reruns`` times), and flagged contended if
    it stays so. ``probe``: at least this many seconds of closed-loop load bring the server to
    steady state before the first step (when ``start`` is not given). ``peak``: the server's
    closed-loop req/s on ``connections`` (the probe's, else twice ``start``), which sizes each
    step's pool where no latency objective does (slo/pool.py). ``hold``: the seconds
    judged in each confirmation of the answer (default ``step``) - a sweep bisects with short
    steps and confirms with a longer hold, so its capacity is a rate held that long.
    ``runner``: what runs each step and the probe, loadbench.run's keywords (default
    loadbench.run; loadbench.distributed.ClusterRunner sends each step from many hosts, each
    shard its share of the rate on one clock). A step that lost part of its generator (a shard's
    worker died) stops the search with outcome "stopped", the steps before it kept."""
    objectives = parse_objectives([slo] if isinstance(slo, str) else list(slo))
    runner = run if runner is None else runner
    hold = step if hold is None else hold
    _checked_settings(
        run_options,
        {
            "step": (step > 0, step),
            "settle": (settle >= 0, settle),
            "hold": (hold > 0, hold),
            "window": (0 < window <= min(step, hold), window),
            "precision": (0 < precision < 1, precision),
            "repeats": (isinstance(repeats, int) and repeats >= 0, repeats),
            "growth": (growth > 1, growth),
            "max_lateness": (max_lateness > 0, max_lateness),
            "max_steps": (isinstance(max_steps, int) and max_steps >= 2, max_steps),
            "start": (start is None or start > 0, start),
            "min_rate": (min_rate > 0, min_rate),
            "contended_share": (0 < contended_share <= 1, contended_share),
            "contended_reruns": (
                isinstance(contended_reruns, int) and contended_reruns >= 0,
                contended_reruns,
            ),
            "probe": (probe > 0, probe),
        },
    )
    # the loosest latency objective sizes each step's pool (slo/pool.py)
    loosest = max((o.limit for o in objectives if o.is_latency), default=0.0) / 1e6 or None
    connections = int(run_options.get("connections", 25))
    run_options["connections"] = connections
    if run_options.get("send_batch") is None:
        run_options["send_batch"] = search_send_batch(objectives)
    found = CapacityResult(
        url,
        [o.text for o in objectives],
        {
            "start": start,
            "step_s": step,
            "hold_s": hold,
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
            "send_batch_s": run_options["send_batch"],
        },
    )

    def measure(rate: float, phase: str) -> Step:
        # the pool rule of slo/pool.py: sized before the step from Little's law at its rate and
        # the server's own peak latency, connected before the schedule starts, never grown in
        # the judged windows (unless max_connections asks for growth)
        pool = presized_pool(rate, connections, peak, loosest)
        if run_options.get("max_connections"):  # the user's cap on the pool (-c to it)
            pool = max(connections, min(pool, int(run_options["max_connections"])))
        options = {**run_options, "connections": pool, "max_connections": pool}
        reruns = 0
        while True:
            result = runner(
                url,
                rate=rate,
                duration=hold if phase == "confirm" else step,
                warmup=settle,
                interval=window,
                sample_pid=sample_pid,
                **options,
            )
            lost = (result.extras.get("cluster") or {}).get("error")
            if lost:  # it sent part of its rate only: not a verdict on the server
                raise _StepNotJudged(f"the step at {rate:,.0f} req/s lost a generator: {lost}")
            outside = outside_of(result, os.cpu_count())
            quiet = outside is None or outside <= contended_share
            if quiet or result.interrupted or reruns >= contended_reruns:
                break
            reruns += 1
        verdict = verdict_of(result, judge(result, objectives, window), objectives)
        limit = limit_of(result, objectives, max_lateness * 1e6, contended_share)
        s = Step(phase, rate, result, verdict, limit, outside, not quiet, reruns)
        found.steps.append(s)
        if on_step is not None:
            on_step(s)
        return s

    if start is None:
        settled = settle_server(url, minimum=probe, runner=runner, **run_options)
        found.settling = settled.to_dict()
        found.probe_rps = settled.rps
        if not settled.rps:
            raise ConfigError(
                f"the closed-loop probe of {url} got no response ({settled.error or 'no answer'})"
            )
        start = max(min_rate, settled.rps / 2)
        peak = peak or settled.rps
    if peak is None:
        peak = 2 * start  # a search is started at half the closed-loop peak
    found.settings["peak_rps"] = peak
    try:
        _search(found, measure, float(start), growth, precision, repeats, max_steps, min_rate)
    except _StepNotJudged as exc:  # say why, keep the steps
        found.outcome, found.stopped_by = "stopped", str(exc)
        found.lower_bound = max((s.rate for s in found.steps if s.passed), default=None)
    return found


def _search(
    found: CapacityResult,
    measure: Callable[[float, str], Step],
    rate: float,
    growth: float,
    precision: float,
    repeats: int,
    max_steps: int,
    min_rate: float,
) -> None:
    """The steps from ``rate`` on, until the answer is confirmed or the budget ends; sets
    ``found``'s outcome and figures."""
    seen = _Bracket()
    unstable_rounds = 0
    outcome: Optional[str] = None
    while len(found.steps) < max_steps:
        s = measure(rate, "search")
        if s.result.interrupted:
            outcome = "interrupted"
            break
        seen.record(s)
        _note_failure(found, s)
        lo, top = seen.lo, seen.top
        if lo is None:
            # nothing passed below the failures: fall (after a generator-bound step, to below
            # what the generator did answer - no need to halve a three-million rate ten times)
            rate = (top or rate) / growth
            if s.generator_bound and s.result.rps > 0:
                rate = min(rate, BOUND_BACKOFF * s.result.rps)
            if rate < min_rate:
                outcome = "below-start" if seen.hi is not None else _bound_outcome(found)
                break
            continue
        if top is None:
            rate = lo * growth
            continue
        if (top - lo) / top > precision:
            rate = (lo + top) / 2
            continue
        confirmed = _confirm(found, seen, measure, lo, repeats)
        if confirmed == "interrupted":
            outcome = "interrupted"
            break
        if confirmed:
            outcome = "capacity" if seen.top == seen.hi else _bound_outcome(found)
            break
        # lo passed only sometimes: not the answer; the search goes on below it
        unstable_rounds += 1
        lo, top = seen.lo, seen.top
        rate = (top or rate) / growth if lo is None else (lo + (top or lo * growth)) / 2
    else:
        outcome = "unstable" if unstable_rounds else "not-converged"
    found.outcome = outcome or "not-converged"
    lo = seen.lo
    if found.outcome == "capacity":
        found.capacity = lo
    else:
        found.lower_bound = lo
    found.first_failing, found.first_bound = seen.hi, seen.ghi
    found.ceiling = _ceiling(found)


def _confirm(
    found: CapacityResult,
    seen: _Bracket,
    measure: Callable[[float, str], Step],
    rate: float,
    repeats: int,
) -> Union[bool, str]:
    """Run ``rate`` ``repeats`` more times: True when every run passed, "interrupted", or False
    (the failing run is recorded in ``seen``)."""
    for _ in range(repeats):
        c = measure(rate, "confirm")
        if c.result.interrupted:
            return "interrupted"
        if not c.passed:
            seen.passes = [p for p in seen.passes if p != rate]
            seen.record(c)
            _note_failure(found, c)
            return False
    return True


def _note_failure(found: CapacityResult, s: Step) -> None:
    """The server's failure at the lowest rate names the failing objective."""
    if s.passed or s.generator_bound:
        return
    if found.first_failing is None or s.rate <= found.first_failing:
        found.first_failing = s.rate
        found.failing_objective, found.failures = s.verdict.failed_objective, s.verdict.failures


def _bound_outcome(found: CapacityResult) -> str:
    """ "generator-bound", "pool-bound" or "contended": what bounded the lowest rate whose
    failure was not the server's."""
    bounded = [s for s in found.steps if s.generator_bound]
    step = min(bounded, key=lambda s: s.rate, default=None)
    return step.outcome if step is not None else "generator-bound"


def _ceiling(found: CapacityResult) -> Optional[float]:
    """The server's CPU ceiling at the least CPU per response any step measured (None without a
    sampled server). Not the ceiling at L: CPU per response falls as the load rises (batching),
    so L's own is the most pessimistic of all - h2o's at L = 64 370 req/s read 77 847-85 518
    (2026-12-06-vm), and the same server answered 100 387 req/s within the objective in the next
    sweep. The step with the most load, usually the first failing one, measures it closest."""
    ceilings = [s.limit.ceiling_rps for s in found.steps if s.limit and s.limit.ceiling_rps]
    return max(ceilings) if ceilings else None
