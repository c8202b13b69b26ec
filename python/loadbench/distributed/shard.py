"""What runs on a Dask worker: one shard of a distributed run.

It opens its connections first (TLS handshakes included: connect_ahead), then waits for the
common instant on the worker's own clock (the client converted it with the measured offset), so
every shard's window starts on open connections and none measures connection setup; it runs its
part with the GIL released (the engine's threads do the work; this
thread only polls, so the worker's heartbeats go on), stops early when the run's stop event is
set (Ctrl-C on the client), and returns plain data: the result JSON with its histograms in
HdrHistogram's compressed encoding, one histogram per timeline interval, a load shape's counts
and histogram per stage, and its real times.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Optional

from ..core.options import RunOptions
from ..core.run import connect_ahead

POLL_S = 0.1
STOP_CHECK_UNTIL_S = 0.25  # no scheduler round trips this close to the instant
# Pre-connecting ends this long before the instant at the latest, so the start is not late.
CONNECT_MARGIN_S = 0.3


def _stop_event(name: Optional[str]) -> Any:
    if not name:
        return None
    from distributed import Event

    return Event(name)


def run_shard(
    index: int,
    url: str,
    run_kwargs: dict[str, Any],
    start_at: float,
    stop_event: Optional[str] = None,
) -> dict[str, Any]:
    stop = _stop_event(stop_event)
    # Connections first, while there is time before the instant (they stay idle until it).
    handle, preconnected = connect_ahead(
        url,
        within=min(start_at - time.time() - CONNECT_MARGIN_S, RunOptions(**run_kwargs).timeout),
        **run_kwargs,
    )
    # Wait for the instant, unless the run is stopped first. Asking the scheduler about the stop
    # takes a round trip, so the last stretch is a plain sleep that ends on the instant.
    while start_at - time.time() > STOP_CHECK_UNTIL_S:
        if stop is not None and stop.is_set():
            handle.stop()
            return {"index": index, "stopped_before_start": True, "host": socket.gethostname()}
        time.sleep(max(0.0, min(start_at - time.time() - STOP_CHECK_UNTIL_S, POLL_S)))
    while (remaining := start_at - time.time()) > 0:
        time.sleep(remaining)
    started_wall = time.time()
    handle.begin()
    stopped = False
    while not handle.wait(POLL_S):
        if not stopped and stop is not None and stop.is_set():
            handle.stop()
            stopped = True
    result = handle.result()
    per_interval = result.interval_histograms() or []
    return {
        "index": index,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "start_at": start_at,  # worker clock
        "started_wall": started_wall,  # worker clock, when the engine was started
        "preconnected": preconnected,  # connections open at the instant
        "result": result.to_dict(),
        "intervals": [_encoded(h) for h in per_interval],
        "stages": [
            {**stage, "latency": _encoded(stage["latency"])} for stage in handle.measured_stages
        ],
    }


def _encoded(h: Any) -> tuple[str, int, int]:
    """A histogram as plain data for the wire (LatencyHistogram.decode reads it back)."""
    return (h.encode(), h.min_us, h.max_us)
