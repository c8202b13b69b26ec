"""The open loop's schedule audit: did the sends follow the asked arrival process?

A send lateness bar says how late each request left, not whether the server saw the arrivals it
was asked to see: a loop that sleeps to the end of a 40 us span and then sends the two requests
due in it keeps every send within 40 us and still hands the server pairs back to back - bursts
the constant (or Poisson) process never makes. Lancet (ATC'19) refuses to report a run whose
inter-arrival times fail a test against the asked distribution; loadbench states the verdict
beside the figures.

The engine counts, per worker, the gaps between consecutive due times (the asked process, as
its scheduler drew it) and between consecutive sends, in quarter-octave buckets
(``gap_bucket`` in core/generator/base/config.hpp: bucket 0 below 256 ns, then four per
doubling). The audit compares the two distributions with one bucket of slack each way - a send
gap within a quarter-octave of where the schedule put it is as asked, so jitter of a few
microseconds on a 20 us gap passes - and reads the largest share of gaps moved further than that
(a Kolmogorov-Smirnov distance with the x-axis tolerance of a Levy distance). The sends follow
the asked arrivals when it is at most FOLLOWS_AT_MOST.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .analysis import cumulative_shares

FOLLOWS_AT_MOST = 0.10  # a tenth of the gaps moved beyond a quarter-octave
BUCKETS = 96


def bucket_low_ns(i: int) -> int:
    """The smallest gap (ns) bucket ``i`` holds."""
    if i == 0:
        return 0
    octave, quarter = 8 + (i - 1) // 4, (i - 1) % 4
    return (1 << octave) + quarter * (1 << (octave - 2))


def distance(due_gaps: Sequence[int], send_gaps: Sequence[int]) -> Optional[float]:
    """The largest share of gaps the sends moved beyond one bucket from the schedule's (0: as
    asked, 1: nothing alike); None when either side has no gap."""
    if not sum(due_gaps) or not sum(send_gaps):
        return None
    due, sent = cumulative_shares(due_gaps), cumulative_shares(send_gaps)
    n = min(len(due), len(sent))
    worst = 0.0
    for k in range(n - 1):
        # sends that came sooner than a bucket's slack allows, and later
        worst = max(worst, sent[k] - due[k + 1], due[k] - sent[k + 1])
    return worst


def sparse(counts: Sequence[int]) -> list[list[int]]:
    """[[bucket, count], ...] of the buckets that counted: how the JSON keeps them."""
    return [[i, int(n)] for i, n in enumerate(counts) if n]


def dense(pairs: Sequence[Sequence[int]]) -> list[int]:
    counts = [0] * BUCKETS
    for i, n in pairs:
        counts[int(i)] = int(n)
    return counts


def audit_block(due_gaps: Sequence[int], send_gaps: Sequence[int]) -> Optional[dict[str, Any]]:
    """The result's ``rate.schedule_audit`` block (None before any gap was counted)."""
    d = distance(due_gaps, send_gaps)
    if d is None:
        return None
    return {
        "distance": round(d, 4),
        "follows": d <= FOLLOWS_AT_MOST,
        "threshold": FOLLOWS_AT_MOST,
        "due_gaps": sparse(due_gaps),
        "send_gaps": sparse(send_gaps),
    }


def median_bucket(counts: Sequence[int]) -> Optional[int]:
    """The bucket holding the median gap."""
    total = sum(counts)
    running = 0
    for i, n in enumerate(counts):
        running += n
        if total and running * 2 >= total:
            return i
    return None


def _span(i: Optional[int]) -> str:
    """A bucket as the gaps it holds: '16.4-20.5 us'."""
    if i is None:
        return "n/a"
    if i == 0:
        return "under 0.3 us"
    low, high = bucket_low_ns(i), bucket_low_ns(i + 1)
    if high < 1_000_000:
        return f"{low / 1000:.1f}-{high / 1000:.1f} us"
    return f"{_ns(low)}-{_ns(high)}"


def audit_sentence(block: dict[str, Any]) -> str:
    """One line for the run's summary."""
    due, sent = dense(block["due_gaps"]), dense(block["send_gaps"])
    share = f"{100 * block['distance']:.0f} %"
    if block["follows"]:
        return (
            f"the sends followed the asked arrivals ({share} of their gaps moved beyond a "
            f"quarter-octave; at most {100 * block['threshold']:.0f} % passes)"
        )
    burst = sum(sent[:1]) / max(1, sum(sent))
    return (
        f"the sends did NOT follow the asked arrivals: {share} of their gaps moved beyond a "
        f"quarter-octave (median gap asked {_span(median_bucket(due))}, sent "
        f"{_span(median_bucket(sent))}; "
        f"{100 * burst:.0f} % of sends left under 256 ns after the one before) - the server saw "
        "another arrival process than the one asked"
    )


def _ns(ns: int) -> str:
    return f"{ns / 1000:.1f} us" if ns < 1_000_000 else f"{ns / 1e6:.2f} ms"
