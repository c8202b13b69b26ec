"""Each worker's clock against ours, measured through the scheduler (NTP's estimate: the
worker's reading minus the midpoint of the round trip; the round trip with the least delay
wins, and half of it bounds the error)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

ROUND_TRIPS = 5


@dataclass
class ClockOffset:
    offset_s: float  # worker clock - our clock
    uncertainty_s: float  # half the best round trip


def measure_offsets(
    client: Any, workers: list[str], round_trips: int = ROUND_TRIPS
) -> dict[str, ClockOffset]:
    best: dict[str, ClockOffset] = {}
    for _ in range(round_trips):
        for addr in workers:
            t0 = time.time()
            worker_now = client.run(time.time, workers=[addr])[addr]
            t1 = time.time()
            sample = ClockOffset(worker_now - (t0 + t1) / 2, (t1 - t0) / 2)
            if addr not in best or sample.uncertainty_s < best[addr].uncertainty_s:
                best[addr] = sample
    return best
