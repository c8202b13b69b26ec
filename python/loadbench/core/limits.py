"""Who limited a run: the server, the generator, or the generator's connection pool.

One rule, decided from both sides' CPU and from the open loop's lateness, used everywhere a
figure is attributed: `loadbench run` (its `limit` line and the JSON's `limit` block), every
step of a capacity search, the sweep's marks (§ generator-bound, ¶ pool-bound) and the report's
orders. In this order:

1. **server** - the server's process tree kept at least ``SERVER_BUSY`` (90 %) of the cores it
   may run on busy through the window. Whatever the generator did, the server could not have
   answered much more: at most its CPU ceiling (below), within 1 - busy of what was measured.
2. **generator** - the generator's own threads were busy at least ``GENERATOR_BUSY`` of the
   window (``result.SATURATION_THRESHOLD``). A generator that is behind also *reads* its
   responses late, so even its uncorrected (service) latency is not the server's.
3. **contended** - other processes (and the hypervisor's steal) took more than
   ``contended_share`` (5 %) of the machine in the window while neither side was saturated: a
   server or generator waiting for a CPU someone else had is neither's limit (⚑ in reports).
4. **generator** (open loop) - its threads were at least ``GENERATOR_STRAINED`` (80 %) busy and
   busier than the server's cores: such a loop reads responses late, by milliseconds, so even the
   latency from the actual send is partly its own.
5. (open loop, judged against objectives) **server** - the server's own service latency broke a
   latency objective by more than the generator's loop delay (p99): what a late generator adds
   to the latency it reads is at most that delay.
6. **generator** (open loop) - its event loop released due requests late: loop lateness p99
   above ``tolerance_us`` (a descheduled or busy loop), and at least half the sends' lateness.
7. **pool** (open loop) - sends waited for a free connection (lateness p99 above
   ``tolerance_us``, more than twice the loop's own), the pool was at its cap, and the server
   had CPU to spare: a larger pool (``max_connections``) would have sent them on time. The
   corrected latency of such a run is the pool's queue, not the server's. A pool still below
   its cap did not grow because the generator's loop did not wake on time to grow it (the
   growth rule): that is the **generator** - a larger cap would change nothing.
8. otherwise **server**: neither side's CPU was the limit and the sends were on time, so what
   was measured - a closed loop's req/s at its concurrency, an open loop's latency - is the
   server's answer to that load.

Beside the verdict every run with a sampled server carries its **CPU ceiling**: the cores the
server may use divided by its CPU time per response (``ceiling_rps``). It assumes the CPU per
response does not fall as the load rises further (it usually falls a little: batching), so it
is an estimate of the most the server could answer on those cores, not a measurement; a
generator-bound figure is then known to lie in [measured, ceiling].
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Optional

from .analysis import CONTENDED_SHARE, outside_share
from .result import SATURATION_THRESHOLD
from .summary import format_us

# The server's tree kept this share of its cores busy: its CPU was the limit.
SERVER_BUSY = 0.90
# The generator's threads were on a CPU this share of the window: its CPU was the limit.
GENERATOR_BUSY = SATURATION_THRESHOLD
# An open loop's generator this busy, and busier than the server, reads its responses late: at
# 85-88 % busy against Beast (68-77 % busy) its uncorrected p99 read 14-16 ms where at 73-78 %
# it read 1-4 ms (a capacity search, 2026-12-03): the latency it measured is partly its own.
GENERATOR_STRAINED = 0.80
# Send lateness (p99) the open loop tolerates before it says who delayed the sends (1 ms: the
# resolution wrk2 and oha keep their schedules to).
TOLERANCE_US = 1000.0

BY = ("server", "generator", "pool", "contended")
# The report's mark for each bound a figure can carry (the server's own figures have none).
MARKS = {"generator": "§", "pool": "¶", "contended": "⚑"}


@dataclass(frozen=True)
class Limit:
    """Who limited a run, why (one sentence a reader can check against the numbers), and the
    evidence: each side's busy share (0..1 of its cores; None where unmeasured) and the
    server's CPU ceiling in req/s (None without a sampled server)."""

    by: str
    reason: str
    server_busy: Optional[float] = None
    server_cores: Optional[int] = None
    generator_busy: Optional[float] = None
    ceiling_rps: Optional[float] = None

    @property
    def bounded(self) -> bool:
        """The run's req/s (or capacity) is a lower bound of the server's: the generator side
        was the limit."""
        return self.by != "server"

    @property
    def mark(self) -> str:
        return MARKS.get(self.by, "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def server_busy(server: Optional[Mapping], cores: Optional[int] = None) -> Optional[float]:
    """The share (0..1) of its cores the server's tree kept busy over the window: CPU seconds /
    (window seconds x cores). ``cores`` when the block does not say (older results): the CPUs
    the server was pinned to."""
    if not server:
        return None
    cpu, window = server.get("cpu_s"), server.get("window_s")
    n = server.get("cores") or cores
    if cpu is None or not window or not n:
        return None
    return float(cpu) / (float(window) * int(n))


def cpu_ceiling(server: Optional[Mapping], cores: Optional[int] = None) -> Optional[float]:
    """The most responses per second the server's cores could give at the CPU per response it
    was measured at: cores / CPU seconds per response (None when either is unknown)."""
    if not server:
        return None
    per_req = server.get("cpu_us_per_req")
    n = server.get("cores") or cores
    if not per_req or not n:
        return None
    return int(n) * 1e6 / float(per_req)


def _p99(block: Any) -> Optional[float]:
    return float(block["p99"]) if isinstance(block, Mapping) and "p99" in block else None


def limited_by(
    result: Mapping,
    *,
    server_cores: Optional[int] = None,
    tolerance_us: float = TOLERANCE_US,
    service_broke_objective: Optional[bool] = None,
    contended_share: float = CONTENDED_SHARE,
    machine_cores: Optional[int] = None,
) -> Limit:
    """Who limited ``result`` (a Result JSON dict, with its `server` block when the server was
    sampled). ``server_cores``: the CPUs the server was pinned to, for results whose server block
    predates its `cores`. ``tolerance_us``: the send lateness p99 that counts (a capacity step
    passes max(its max_lateness, a fifth of the tightest objective)). ``service_broke_objective``:
    a capacity step's verdict on the server's own (uncorrected) latency, when it was judged.
    ``contended_share``: the share of the machine (``machine_cores``, default this machine's)
    other processes may take before a window is contended."""
    server = result.get("server") or None
    generator = result.get("generator") or {}
    rate = result.get("rate") or None
    cores = (server or {}).get("cores") or server_cores
    busy = server_busy(server, cores)
    # busy-poll: the threads hold their cores whole; their load is the share spent working
    gen_busy = generator.get("work_share", generator.get("utilisation"))
    gen_busy = float(gen_busy) if gen_busy is not None else None
    evidence = dict(
        server_busy=busy,
        server_cores=int(cores) if cores else None,
        generator_busy=gen_busy,
        ceiling_rps=cpu_ceiling(server, cores),
    )
    if busy is not None and busy >= SERVER_BUSY:
        return Limit(
            "server",
            f"the server kept {100 * busy:.0f} % of its {cores} core(s) busy",
            **evidence,
        )
    saturated = bool(generator.get("saturated")) or (
        gen_busy is not None and gen_busy >= GENERATOR_BUSY
    )
    if saturated:
        return Limit(
            "generator",
            f"the generator's threads were {100 * (gen_busy or 0):.0f} % busy"
            + (
                f" while the server used {100 * busy:.0f} % of its cores"
                if busy is not None
                else ""
            ),
            **evidence,
        )
    outside = outside_share(server or {}, machine_cores or os.cpu_count())
    strained = (
        rate is not None
        and gen_busy is not None
        and gen_busy >= GENERATOR_STRAINED
        and (busy is None or gen_busy > busy)
    )
    if outside is not None and outside > contended_share:
        return Limit(
            "contended",
            f"other processes and steal took {100 * outside:.0f} % of the machine in the window: "
            "the server and the generator waited for CPUs they did not have",
            **evidence,
        )
    if strained:
        return Limit(
            "generator",
            f"the generator was the busier side ({100 * gen_busy:.0f} % of its threads"
            + (f" against the server's {100 * busy:.0f} %" if busy is not None else "")
            + "): at that load it reads responses late, so the latency it measured is partly its own",
            **evidence,
        )
    if rate is not None:
        loop_late = _p99(rate.get("loop_lateness_us"))
        late = _p99(rate.get("lateness_us"))
        if service_broke_objective:
            return Limit(
                "server",
                "the server's own latency (from the actual send) broke the objective by more "
                "than the generator's own delay",
                **evidence,
            )
        if loop_late is not None and loop_late > tolerance_us and 2 * loop_late >= (late or 0):
            return Limit(
                "generator",
                f"the generator's loop released due requests late (p99 {format_us(loop_late)}): "
                "its responses were read late too",
                **evidence,
            )
        if late is not None and late > tolerance_us:
            pool = rate.get("pool") or {}
            waits = rate.get("slot_waits")
            due = rate.get("due") or 0
            share = f"{100 * waits / due:.0f} % of the sends" if waits and due else "sends"
            size = (
                f" (the pool held {pool.get('size')} of at most {pool.get('cap')} connections)"
                if pool.get("cap")
                else ""
            )
            if pool.get("cap") and pool.get("size") is not None and pool["size"] < pool["cap"]:
                # (a capacity search read "a larger pool would have sent them on time" with 323
                # of 686 connections held and the generator 78 % busy)
                return Limit(
                    "generator",
                    f"{share} waited for a free connection{size}: the pool grows only while "
                    f"the generator's loop wakes on time, and it did not keep up (lateness p99 "
                    f"{format_us(late)}) - the generator's limit, not the pool's cap",
                    **evidence,
                )
            return Limit(
                "pool",
                f"{share} waited for a free connection{size}: lateness p99 "
                f"{format_us(late)} while the server had CPU to spare - a larger pool "
                "(--max-connections) would have sent them on time",
                **evidence,
            )
    if busy is None:
        return Limit(
            "server", "the generator kept up (the server's CPU was not sampled)", **evidence
        )
    return Limit(
        "server",
        f"the generator kept up and the server used {100 * busy:.0f} % of its core(s): "
        "what was measured is the server's answer to this load",
        **evidence,
    )
