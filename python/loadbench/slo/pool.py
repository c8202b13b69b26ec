"""The open loop's connections, one rule for a capacity search's steps and a sweep's open-loop
cells, so the two tables that judge a rate judge it on the same pool (issue 57).

The pool is sized before the schedule starts, from Little's law at the step's rate: in flight =
rate x latency, with the latency the server itself showed at its closed-loop peak over
``connections`` (``connections`` / peak, requests and streams alike: an HTTP/2 connection's
streams count in both), twice over for headroom - and it stays that size. It is not grown during
the step: a pool that grew toward a thousand connections while the search judged it opened them
in the step's own windows, and that storm failed the step, not the server (2026-12-06-vm-3:
70 of 101 failing steps of the fast servers opened >= 300 new connections, against 11 of 96
passing ones). A server slower than twice its own peak latency leaves sends waiting for a
connection; the corrected latency counts that wait, as wrk2's fixed connections do, and the
run says so (pool-bound, when the server had CPU to spare).
"""

from __future__ import annotations

import math
from typing import Optional

# twice the in-flight the server's own peak latency needs at the rate
HEADROOM = 2.0
# never more than this many connections, whatever the rate (an overloaded server is not buried)
MOST = 1000


def presized_pool(rate: float, connections: int, peak_rps: Optional[float]) -> int:
    """Connections for an open loop at ``rate`` against a server that answered ``peak_rps``
    on ``connections`` in a closed loop: max(connections, HEADROOM x connections x rate /
    peak_rps), at most MOST; ``connections`` when the peak is unknown."""
    if not peak_rps or peak_rps <= 0 or rate <= 0:
        return connections
    need = math.ceil(HEADROOM * connections * rate / peak_rps - 1e-9)
    return max(connections, min(MOST, need))
