"""Who limited a run: the server, the generator, or the generator's connection pool.

One rule, decided from both sides' CPU and from the open loop's lateness, used everywhere a
figure is attributed: `loadbench run` (its `limit` line and the JSON's `limit` block), every
step of a capacity search, the sweep's marks (§ generator-bound, ¶ pool-bound) and the report's
orders. In this order:

1. **server** - the server's process tree kept at least ``SERVER_BUSY`` (90 %) of the cores it
   may run on busy through the window. Whatever the generator did, the server could not have
   answered much more: at most its CPU ceiling (below), within 1 - busy of what was measured.
2. **generator** - the generator's own threads were busy at least ``GENERATOR_BUSY`` of the
   window (``result.SATURATION_THRESHOLD``), or (open loop) its event loop released due
   requests late: loop lateness p99 above ``tolerance_us``. A generator that is behind also
   *reads* its responses late, so even its uncorrected (service) latency is not the server's.
3. (open loop, judged against objectives) **server** - the server's own service latency,
   read by a generator that kept up, broke a latency objective.
4. **pool** (open loop) - sends waited for a free connection (lateness p99 above
   ``tolerance_us`` while the loop itself was on time) and the server had CPU to spare: a
   larger pool (``max_connections``) would have sent them on time. The corrected latency of
   such a run is the pool's queue, not the server's.
5. otherwise **server**: neither side's CPU was the limit and the sends were on time, so what
   was measured - a closed loop's req/s at its concurrency, an open loop's latency - is the
   server's answer to that load.

Beside the verdict every run with a sampled server carries its **CPU ceiling**: the cores the
server may use divided by its CPU time per response (``ceiling_rps``). It assumes the CPU per
response does not fall as the load rises further (it usually falls a little: batching), so it
is an estimate of the most the server could answer on those cores, not a measurement; a
generator-bound figure is then known to lie in [measured, ceiling].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Optional

from .result import SATURATION_THRESHOLD

# The server's tree kept this share of its cores busy: its CPU was the limit.
SERVER_BUSY = 0.90
# The generator's threads were on a CPU this share of the window: its CPU was the limit.
GENERATOR_BUSY = SATURATION_THRESHOLD
# Send lateness (p99) the open loop tolerates before it says who delayed the sends (1 ms: the
# resolution wrk2 and oha keep their schedules to).
TOLERANCE_US = 1000.0

BY = ("server", "generator", "pool")
# The report's mark for each bound a figure can carry (the server's own figures have none).
MARKS = {"generator": "§", "pool": "¶"}


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
) -> Limit:
    """Who limited ``result`` (a Result JSON dict, with its `server` block when the server was
    sampled). ``server_cores``: the CPUs the server was pinned to, for results whose server block
    predates its `cores`. ``tolerance_us``: the send lateness p99 that counts (a capacity step
    passes max(its max_lateness, a fifth of the tightest objective)). ``service_broke_objective``:
    a capacity step's verdict on the server's own (uncorrected) latency, when it was judged."""
    server = result.get("server") or None
    generator = result.get("generator") or {}
    rate = result.get("rate") or None
    cores = (server or {}).get("cores") or server_cores
    busy = server_busy(server, cores)
    gen_busy = generator.get("utilisation")
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
    if rate is not None:
        loop_late = _p99(rate.get("loop_lateness_us"))
        late = _p99(rate.get("lateness_us"))
        if loop_late is not None and loop_late > tolerance_us:
            return Limit(
                "generator",
                f"the generator's loop released due requests late (p99 {loop_late / 1000:.3g} ms): "
                "its responses were read late too",
                **evidence,
            )
        if service_broke_objective:
            return Limit(
                "server",
                "the server's own latency (from the actual send, the generator on time) broke "
                "the objective",
                **evidence,
            )
        if late is not None and late > tolerance_us:
            pool = rate.get("pool") or {}
            waits = rate.get("slot_waits")
            due = rate.get("due") or 0
            share = f"{100 * waits / due:.0f} % of the sends" if waits and due else "sends"
            size = (
                f" (pool {pool.get('peak')} of at most {pool.get('cap')} connections)"
                if pool.get("cap")
                else ""
            )
            return Limit(
                "pool",
                f"{share} waited for a free connection{size}: lateness p99 "
                f"{late / 1000:.3g} ms while the server had CPU to spare - a larger pool "
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
