"""Steady state before judging: load a server until its throughput stops climbing.

A fresh server is often not yet the server it will be: a JIT (PyPy, YJIT, V8) compiles its hot
path after thousands of requests, allocators and caches fill, connections are still being
accepted. A figure measured before that is a cold figure - PyPy's repeats climbed 737 -> 1 019
-> 3 175 req/s behind a 0.25 s warm-up - and a capacity searched from half of it starts far
below the server. ``settle`` runs short closed-loop rounds until the median of the last
``WINDOW`` rounds is within ``tolerance`` of the median of the ``WINDOW`` before (no longer
climbing) after at least ``minimum`` seconds of load, or ``most`` seconds have passed (then it
says the server did not settle). Medians, because one round of a quarter second swings by tens
of per cent on a runtime with a garbage collector (PyPy's rounds at 0.25 s, once warm: 2 100,
1 500, 2 100, 2 092, 2 020, 1 904, 1 824, 1 288, 3 124): a round against the round before
stopped at the first dip. A runtime that climbs in steps with plateaus between them (PyPy's
JIT: 400 req/s for 4 s, then 700, then 2 000 from about 10 s) needs its registry `warmup` as the
minimum as well.

    s = settle(url, connections=25, minimum=0.0, most=15.0)
    s.steady, s.rps, s.rounds   # True, 3 175.2, [737.1, 1 019.4, ..., 3 101.8, 3 175.2]
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional

# One round of load: long enough for thousands of requests on any server worth measuring, short
# enough that a 15 s budget sees the climb.
ROUND_S = 0.5
# The median of the last WINDOW rounds within this share of the WINDOW before: not climbing.
TOLERANCE = 0.05
WINDOW = 3
MOST_S = 15.0


@dataclass
class Settling:
    """How a server was brought to steady state: each round's req/s, whether the last two agreed
    within the tolerance, and the load time it took."""

    rounds: list[float] = field(default_factory=list)
    steady: bool = False
    seconds: float = 0.0
    error: Optional[str] = None

    @property
    def rps(self) -> Optional[float]:
        """The steady throughput: the median of the last WINDOW rounds' req/s."""
        return statistics.median(self.rounds[-WINDOW:]) if self.rounds else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rps": self.rps}

    def text(self) -> str:
        if self.error:
            return f"not settled: {self.error}"
        climb = " -> ".join(f"{r:,.0f}".replace(",", " ") for r in self.rounds)
        verdict = "steady" if self.steady else f"still changing after {self.seconds:g} s"
        return f"{verdict} ({climb} req/s over {len(self.rounds)} rounds of load)"


def settle(
    url: str,
    *,
    minimum: float = 0.0,
    most: float = MOST_S,
    round_s: float = ROUND_S,
    tolerance: float = TOLERANCE,
    runner: Optional[Callable[..., Any]] = None,
    **run_options: Any,
) -> Settling:
    """Closed-loop rounds of ``round_s`` against ``url`` (``run_options`` as loadbench.run's)
    until the last WINDOW rounds' median is within ``tolerance`` of the WINDOW before's, after
    ``minimum`` seconds of load, or ``most`` seconds. ``runner``: loadbench.run or a stand-in with its keywords; a round that fails
    (refused, no response) ends the settling with its error."""
    if runner is None:
        from .run import run as runner
    out = Settling()
    # its own window, and a closed loop: the open loop's options (its pool cap, its loop) are not
    # for its rounds
    for key in ("duration", "requests", "warmup", "rate", "rate_schedule", "steps",
                "max_connections", "busy_poll"):  # fmt: skip
        run_options.pop(key, None)
    while out.seconds < max(most, round_s):
        try:
            result = runner(url, duration=round_s, warmup=0.0, **run_options)
        except Exception as exc:  # noqa: BLE001 - a server that cannot be loaded is said, not raised
            out.error = str(exc)
            return out
        out.seconds += round_s
        rps = float(result.rps)
        if not result.responses:
            out.error = result.first_error or "no response"
            return out
        out.rounds.append(rps)
        if out.seconds >= minimum and len(out.rounds) >= 2 * WINDOW:
            last = statistics.median(out.rounds[-WINDOW:])
            before = statistics.median(out.rounds[-2 * WINDOW : -WINDOW])
            if last <= before * (1 + tolerance):
                out.steady = True
                return out
    return out
