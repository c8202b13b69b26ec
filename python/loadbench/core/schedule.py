"""Load shapes: an open-loop rate that changes over the run (docs/open-loop.md, "Load shapes"),
and the closed loop's active connections (docs/run.md, "Connections schedule").

    rate_schedule="0s:1000, 30s:5000, 90s:5000, 100s:0"   # or [(0, 1000), (30, 5000), ...]
    steps="1000:10s, 2000:10s"                             # or [(1000, 10), (2000, 10)]
    connections_schedule="0s:10, 30s:100"                  # closed loop, k6's ramping VUs

A schedule is the run's total rate, piecewise linear between (time, rate) points; two points at
one time are an instant step, and `steps` is a schedule of flat stages. Time 0 is the measured
window's start, the warm-up runs at the first rate, and the window ends at the last point. Each
stretch between two times is a stage, measured on its own. The engine (core/generator/base/schedule.hpp,
RateCurve) places the arrivals and checks the points' ranges; this module reads the text and
computes what the result shows beside the measurements: a span's target (the rate's integral over
it) and the stages.
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional, Sequence, Union

from .errors import ConfigError

Point = tuple[float, float]  # (seconds from the window's start, requests per second)
ScheduleLike = Union[str, Sequence[Sequence[Any]], None]

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(us|ms|s|m|h)?\s*$")
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: Any, what: str = "duration") -> float:
    """ "10s", "500ms", "2m", "1h" or plain seconds."""
    m = _DURATION.match(str(text))
    if not m:
        raise ConfigError(f"bad {what} {text!r}: use e.g. 10s, 500ms, 2m")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _seconds(value: Any, what: str) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"bad {what} {value!r}: use seconds, e.g. 30 or '30s'")
    if isinstance(value, (int, float)):
        return float(value)
    return parse_duration(value, what)


def _rate(value: Any, what: str) -> float:
    try:
        if isinstance(value, bool):
            raise ValueError
        rate = float(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"bad {what} {value!r}: a rate is requests per second, e.g. 1000"
        ) from None
    return rate


def _pairs(value: ScheduleLike, name: str, form: str) -> list[tuple[Any, Any]]:
    """The (a, b) items of `value`: 'A:B, A:B' text or a sequence of pairs."""
    if isinstance(value, str):
        items = [item.strip() for item in value.split(",")]
        out = []
        for item in items:
            a, sep, b = item.partition(":")
            if not sep or not a.strip() or not b.strip() or ":" in b:
                raise ConfigError(
                    f"bad {name} item {item!r} in {value!r}: expected {form} items separated by commas"
                )
            out.append((a.strip(), b.strip()))
        return out
    if isinstance(value, (bytes, dict)) or not isinstance(value, Sequence):
        raise ConfigError(f"{name} must be text such as {form!r} or a list of pairs, not {value!r}")
    out = []
    for item in value:
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise ConfigError(
                f"bad {name} item {item!r}: expected a pair ({form.replace(':', ', ')})"
            )
        out.append((item[0], item[1]))
    return out


def parse_rate_schedule(value: ScheduleLike) -> list[Point]:
    """(seconds, rate) points from '0s:1000, 30s:5000' or [(0, 1000), (30, 5000)]. The ranges
    (from 0 s, times not decreasing, rates >= 0) are the engine's check."""
    return [
        (_seconds(t, "rate_schedule time"), _rate(r, "rate_schedule rate"))
        for t, r in _pairs(value, "rate_schedule", "TIME:RATE")
    ]


def parse_connections_schedule(value: ScheduleLike) -> list[Point]:
    """(seconds, connections) points from '0s:10, 30s:100' or [(0, 10), (30, 100)]: whole
    numbers of connections; the ranges are the engine's check, as for a rate schedule."""
    points = []
    for t, n in _pairs(value, "connections_schedule", "TIME:CONNECTIONS"):
        try:
            count = float(n)
        except (TypeError, ValueError):
            count = math.nan
        if isinstance(n, bool) or not math.isfinite(count) or count != int(count):
            raise ConfigError(
                f"bad connections_schedule count {n!r}: a whole number of connections, e.g. 50"
            )
        points.append((_seconds(t, "connections_schedule time"), float(count)))
    return points


def parse_steps(value: ScheduleLike) -> list[tuple[float, float]]:
    """(rate, seconds) steps from '1000:10s, 2000:10s' or [(1000, 10), (2000, 10)]."""
    steps = [
        (_rate(r, "steps rate"), _seconds(d, "steps duration"))
        for r, d in _pairs(value, "steps", "RATE:DURATION")
    ]
    if not steps:
        raise ConfigError("steps is empty: give RATE:DURATION items, e.g. '1000:10s, 2000:10s'")
    for i, (rate, seconds) in enumerate(steps, 1):
        if not (seconds > 0 and math.isfinite(seconds)):
            raise ConfigError(f"step {i} ({rate:g}/s) must last longer than 0 s, not {seconds:g} s")
    return steps


def steps_to_points(steps: Sequence[tuple[float, float]]) -> list[Point]:
    """Flat stages as schedule points: each rate from its start to its end, instant steps."""
    points: list[Point] = []
    t = 0.0
    for rate, seconds in steps:
        points += [(t, rate), (t + seconds, rate)]
        t += seconds
    return points


def integral(points: Sequence[Point], start: float, end: float) -> float:
    """Requests the schedule has due from `start` to `end` (seconds from the window's start;
    the warm-up is not in it)."""
    total = 0.0
    for (t0, r0), (t1, r1) in zip(points, points[1:]):
        a, b = max(start, t0), min(end, t1)
        if b <= a or t1 <= t0:
            continue
        slope = (r1 - r0) / (t1 - t0)
        ra, rb = r0 + slope * (a - t0), r0 + slope * (b - t0)
        total += 0.5 * (ra + rb) * (b - a)
    return total


def stage_spans(points: Sequence[Point]) -> list[tuple[float, float, float, float]]:
    """(start, end, rate at start, rate at end) of each stage: each stretch between two times
    (the engine's stage edges, whole nanoseconds apart)."""
    return [
        (t0, t1, r0, r1)
        for (t0, r0), (t1, r1) in zip(points, points[1:])
        if round(t1 * 1e9) > round(t0 * 1e9)
    ]


def stage_blocks(
    points: Sequence[Point], measured: Sequence[dict[str, Any]], duration_s: float
) -> list[dict[str, Any]]:
    """The result's `stages`: each stage's span, target and what its requests (those due in it)
    met. ``measured``: the engine's per-stage counts with a `latency` histogram
    (loadbench.result.LatencyHistogram). Rates are over the part of the stage inside the window
    (all of it unless the run was interrupted)."""
    out = []
    for (t0, t1, r0, r1), m in zip(stage_spans(points), measured):
        seconds = max(0.0, min(t1, duration_s) - t0)
        lat = m["latency"]
        out.append(
            {
                "t_s": t0,
                "until_s": t1,
                "rate_from": r0,
                "rate_to": r1,
                "target_rps": integral(points, t0, t0 + seconds) / seconds if seconds else None,
                "achieved_rps": m["sends"] / seconds if seconds else None,
                "answered_rps": m["responses"] / seconds if seconds else None,
                "due": int(m["due"]),
                "sends": int(m["sends"]),
                "responses": int(m["responses"]),
                "errors": int(m["errors"]),
                "unfinished": int(m["unfinished"]),
                "latency_us": _stage_latency(lat),
            }
        )
    return out


def _stage_latency(lat) -> dict[str, Any]:
    """A stage's corrected latency, as every stage block writes it (us)."""
    return {
        "p50": lat.percentile(50),
        "p90": lat.percentile(90),
        "p99": lat.percentile(99),
        "max": lat.max,
    }


def connection_stage_blocks(
    points: Sequence[Point], measured: Sequence[dict[str, Any]], duration_s: float
) -> list[dict[str, Any]]:
    """The closed loop's `stages` along a connections schedule: each stage's span, its active
    connections (the schedule's mean over it), and what its requests (those started in it) met."""
    out = []
    for (t0, t1, n0, n1), m in zip(stage_spans(points), measured):
        seconds = max(0.0, min(t1, duration_s) - t0)
        lat = m["latency"]
        out.append(
            {
                "t_s": t0,
                "until_s": t1,
                "connections_from": int(n0),
                "connections_to": int(n1),
                "connections": integral(points, t0, t0 + seconds) / seconds if seconds else None,
                "rps": m["responses"] / seconds if seconds else None,
                "responses": int(m["responses"]),
                "errors": int(m["errors"]),
                "unfinished": int(m["unfinished"]),
                "latency_us": _stage_latency(lat),
            }
        )
    return out


def shape_stages(
    config: dict[str, Any], measured: Sequence[dict[str, Any]], duration_s: float
) -> list[dict[str, Any]]:
    """The result's `stages` for the load shape its `config` records (none without one)."""
    if schedule_of(config):
        return stage_blocks(schedule_of(config), measured, duration_s)
    if connections_schedule_of(config):
        return connection_stage_blocks(connections_schedule_of(config), measured, duration_s)
    return []


def schedule_of(config: dict[str, Any]) -> Optional[list[Point]]:
    """The rate schedule's points a result's `config` block records, or None."""
    points = config.get("rate_schedule")
    return [(float(t), float(r)) for t, r in points] if points else None


def connections_schedule_of(config: dict[str, Any]) -> Optional[list[Point]]:
    """The connections schedule's points a result's `config` block records, or None."""
    points = config.get("connections_schedule")
    return [(float(t), float(n)) for t, n in points] if points else None
