"""The open loop's connections, one rule for a capacity search's steps and a sweep's open-loop
cells, so the two tables that judge a rate judge it on the same pool (issue 57).

The pool is sized before the schedule starts from Little's law at the step's rate - in flight =
rate x latency - and stays that size. The latency is the loosest latency objective when there
is one (a server that meets p99 < 10 ms keeps its mean below that, so ``rate`` x 10 ms
connections, with HEADROOM, never leave a send waiting unless the server misses the objective),
else twice the server's own latency at its closed-loop peak over ``connections`` (``connections``
/ peak: requests and streams alike). It is connected before the schedule starts and never grown
while the step is judged: a pool that grew toward a thousand connections inside the judged
windows opened them there, and that storm failed the step, not the server (2026-12-06-vm-3: 70
of 101 failing steps of the fast servers opened >= 300 new connections, against 11 of 96
passing ones). The generator hands each due request to the connection freed last (its ready
list is a stack), so the connections a rate does not need stay idle. (Sized at twice the peak
latency alone, h2o's and go's pools of 33-38 connections filled at 44 000 and 37 000 req/s while
their servers had CPU to spare - a server's latency rises before its CPU saturates.)
"""

from __future__ import annotations

import math
from typing import Optional

# Little's law's in-flight at the rate, with this margin
HEADROOM = 1.25
# without an objective: twice the in-flight the server's own peak latency needs at the rate
PEAK_HEADROOM = 2.0
# never more than this many connections, whatever the rate (an overloaded server is not buried)
MOST = 1000


def presized_pool(
    rate: float,
    connections: int,
    peak_rps: Optional[float] = None,
    latency_limit_s: Optional[float] = None,
) -> int:
    """Connections for an open loop at ``rate``: HEADROOM x rate x ``latency_limit_s`` (the
    loosest latency objective) when given, else PEAK_HEADROOM x ``connections`` x rate /
    ``peak_rps`` (the server's closed-loop req/s on ``connections``); at least
    ``connections``, at most MOST; ``connections`` when neither is known."""
    if rate <= 0:
        return connections
    if latency_limit_s:
        need = math.ceil(HEADROOM * rate * latency_limit_s - 1e-9)
    elif peak_rps and peak_rps > 0:
        need = math.ceil(PEAK_HEADROOM * connections * rate / peak_rps - 1e-9)
    else:
        return connections
    return max(connections, min(MOST, need))
