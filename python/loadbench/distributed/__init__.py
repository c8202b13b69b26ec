"""One run from many machines: shards on Dask distributed workers, merged exactly.

    import loadbench.distributed as lbd
    r = lbd.run("http://10.0.0.5:8080/", cluster="tcp://10.0.0.2:8786", shards=4,
                connections=200, duration=30, warmup=2)
    r.rps, r.percentile(99), r.extras["shards"]      # merged figures; each shard's own

The run is split into `shards` parts (plan.py), each submitted to a different worker
(`workers=[address]`, and `resources={"loadbench": 1}` when the workers advertise it, so no
two shards share a worker), started at one instant a few seconds ahead on every worker's own
clock (offsets measured through the scheduler, clock.py), and merged bucket by bucket
(merge.py). `cluster` is a scheduler address, a `distributed.Client`, or "local" for a
LocalCluster of `shards` worker processes on this machine.
"""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any, Callable, Optional

from ..core.errors import ConfigError, LoadbenchError
from ..core.options import RunOptions
from ..core.result import Result
from ..core.run import POLL_INTERVAL_S, prepare
from ..core.sampler import Sampler, WindowEdges
from .clock import ClockOffset, measure_offsets
from .merge import merge_shards, shard_figures
from .plan import plan_shards
from .shard import run_shard

RESOURCE = "loadbench"
DEFAULT_START_DELAY_S = 3.0
DEFAULT_CLOCK_TOLERANCE_MS = 5.0
CONNECT_TIMEOUT_S = 10.0


class ShardLostError(LoadbenchError):
    """A shard's worker died (or its task failed) mid-run. `result` holds the other shards'
    merged figures, so nothing they measured is lost."""

    def __init__(self, message: str, result: Optional[Result]) -> None:
        super().__init__(message)
        self.result = result


def _client(cluster: Any, shards: int) -> tuple[Any, Callable[[], None]]:
    """(client, close) for an address, a Client, or "local"."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError(
            "distributed runs need Dask: pip install 'loadbench[distributed]' "
            "(or pip install distributed)"
        ) from None
    if isinstance(cluster, Client):
        return cluster, lambda: None
    if cluster == "local":
        local = LocalCluster(
            n_workers=shards,
            threads_per_worker=1,
            processes=True,
            resources={RESOURCE: 1},
            dashboard_address=":0",
        )
        client = Client(local)

        def close() -> None:
            client.close()
            local.close()

        return client, close
    if not isinstance(cluster, str) or not cluster:
        raise ConfigError(
            f"cluster must be a scheduler address (tcp://HOST:8786), a Client or 'local', "
            f"not {cluster!r}"
        )
    try:
        client = Client(cluster, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        raise LoadbenchError(f"cannot reach the Dask scheduler at {cluster}: {exc}") from None
    return client, client.close


def pick_workers(workers: dict[str, dict], shards: int) -> list[str]:
    """`shards` distinct workers, spread over hosts first. Workers that advertise the
    `loadbench` resource are the pool when any do (start them with --resources loadbench=1)."""
    tagged = [a for a, w in workers.items() if (w.get("resources") or {}).get(RESOURCE, 0) >= 1]
    pool = tagged or list(workers)
    if len(pool) < shards:
        what = f"workers with the '{RESOURCE}' resource" if tagged else "workers"
        raise ConfigError(f"{shards} shards need {shards} {what}; the cluster has {len(pool)}")
    by_host: dict[str, list[str]] = {}
    for addr in sorted(pool):
        by_host.setdefault(workers[addr].get("host", addr), []).append(addr)
    picked: list[str] = []
    while len(picked) < shards:  # round-robin over hosts
        for addrs in by_host.values():
            if addrs and len(picked) < shards:
                picked.append(addrs.pop(0))
    return picked


def run(
    url: str,
    *,
    cluster: Any,
    shards: Optional[int] = None,
    start_delay: float = DEFAULT_START_DELAY_S,
    clock_tolerance_ms: float = DEFAULT_CLOCK_TOLERANCE_MS,
    sample_pid: Optional[int] = None,
    progress: Optional[Callable[[dict], None]] = None,
    **run_kwargs: Any,
) -> Result:
    """`loadbench.run()` spread over Dask workers; every keyword of run() is accepted.

    Raises ShardLostError (with `.result` = the other shards merged) when a worker is lost.
    `sample_pid` samples a server on this machine at the merged window's edges.
    """
    run_kwargs.pop("progress", None)
    # every argument checked here, before any worker is touched; the shards get the options as
    # a plain dict of the fields given (the wire form to the workers), split by plan_shards
    prepare(url, **run_kwargs)
    options = RunOptions(**run_kwargs)
    client, close = _client(cluster, shards or 2)
    try:
        info = scheduler_identity(client)
        workers = info.get("workers", {})
        if shards is None:
            shards = len(workers)
        plan = plan_shards(shards, run_kwargs)
        picked = pick_workers(workers, shards)
        tagged = all((workers[a].get("resources") or {}).get(RESOURCE, 0) >= 1 for a in picked)
        offsets = measure_offsets(client, picked)
        return _run_shards(
            client,
            url,
            options,
            plan,
            picked,
            tagged,
            offsets,
            start_delay,
            clock_tolerance_ms,
            sample_pid,
            progress,
            workers,
            info.get("address", str(cluster)),
        )
    finally:
        close()


def scheduler_identity(client: Any) -> dict:
    """The scheduler's identity with every worker, fetched for this call. Not
    `client.scheduler_info()`: that returns a cache which the client's own periodic refresh
    overwrites with a worker-less summary, so under load a live worker can look gone."""
    try:
        return dict(client.sync(client.scheduler.identity, n_workers=-1))
    except TypeError:  # a scheduler that predates n_workers sends every worker anyway
        return dict(client.sync(client.scheduler.identity))


def _run_shards(
    client: Any,
    url: str,
    options: RunOptions,
    plan: list,
    picked: list[str],
    tagged: bool,
    offsets: dict[str, ClockOffset],
    start_delay: float,
    clock_tolerance_ms: float,
    sample_pid: Optional[int],
    progress: Optional[Callable[[dict], None]],
    workers: dict[str, dict],
    scheduler: str,
) -> Result:
    from distributed import Event

    run_id = uuid.uuid4().hex[:12]
    stop = Event(f"loadbench-stop-{run_id}", client=client)
    edges = _window_edges(sample_pid, options)
    instant = time.time() + start_delay
    futures = []
    for shard, addr in zip(plan, picked):
        start_at = instant + shard.start_offset_s + offsets[addr].offset_s  # the worker's clock
        futures.append(
            client.submit(
                run_shard,
                shard.index,
                url,
                shard.run_kwargs,
                start_at,
                stop.name,
                key=f"loadbench-shard-{shard.index}-{run_id}",
                workers=[addr],
                allow_other_workers=False,
                resources={RESOURCE: 1} if tagged else None,
                pure=False,
                retries=0,
            )
        )
    parts: dict[int, dict] = {}
    lost: dict[int, str] = {}
    interrupted = False
    engine_started = False
    try:
        while len(parts) + len(lost) < len(futures):
            now = time.time()
            if edges is not None and not engine_started and now >= instant:
                edges.started(now - instant)
                engine_started = True
            _collect(client, futures, picked, parts, lost)
            if edges is not None:
                edges.poll()
            if progress is not None:
                progress(
                    {
                        "shards": len(futures),
                        "shards_done": len(parts),
                        "shards_lost": len(lost),
                        "elapsed_s": max(0.0, now - instant),
                    }
                )
            time.sleep(edges.wait_s(POLL_INTERVAL_S) if edges is not None else POLL_INTERVAL_S)
    except KeyboardInterrupt:
        interrupted = True
        stop.set()  # every shard stops and returns what it measured
        deadline = time.time() + options.timeout + 10.0
        while len(parts) + len(lost) < len(futures) and time.time() < deadline:
            _collect(client, futures, picked, parts, lost)
            time.sleep(POLL_INTERVAL_S)
        for i, f in enumerate(futures):
            if i not in parts and i not in lost:
                lost[i] = "did not answer the stop"
                f.cancel()
    measured = [parts[i] for i in sorted(parts) if "result" in parts[i]]
    result = (
        _merge(
            url,
            options,
            measured,
            picked,
            offsets,
            instant,
            plan,
            workers,
            scheduler,
            clock_tolerance_ms,
            lost,
            interrupted,
        )
        if measured
        else None
    )
    if result is not None and edges is not None:
        edges.poll()
        # shards on this machine are the run's generator, not other processes
        here = socket.gethostname()
        local = [p["pid"] for p in measured if p.get("host") == here and p.get("pid")]
        result.extras["server"] = edges.block(
            result.responses,
            also_ours=local,
            connections=int(result.config.get("connections") or 0),
        )
    if lost:
        what = "; ".join(f"shard {i} on {picked[i]}: {why}" for i, why in sorted(lost.items()))
        message = f"{len(lost)} of {len(futures)} shards lost ({what})"
        if result is not None:
            result.first_error = result.first_error or message
            message += f"; the other {len(measured)} shards' results are kept"
        raise ShardLostError(message, result)
    assert result is not None
    return result


def _collect(
    client: Any, futures: list, picked: list[str], parts: dict[int, dict], lost: dict[int, str]
) -> None:
    alive = set(scheduler_identity(client).get("workers", {}))
    for i, f in enumerate(futures):
        if i in parts or i in lost:
            continue
        if f.status == "finished":
            parts[i] = f.result()
        elif f.status == "error":
            exc = f.exception()
            if isinstance(exc, ConfigError):
                raise ConfigError(str(exc))  # the same bad argument on every shard: say it once
            lost[i] = f"{type(exc).__name__}: {exc}"
        elif f.status in ("cancelled", "lost") or picked[i] not in alive:
            lost[i] = (
                "its worker left the cluster" if picked[i] not in alive else f"task {f.status}"
            )
            f.cancel()


def _window_edges(sample_pid: Optional[int], options: RunOptions) -> Any:
    if sample_pid is None:
        return None
    duration = None if options.requests is not None else options.duration
    edges = WindowEdges(Sampler(sample_pid, tree=True), options.warmup, duration)
    edges.before_start()
    return edges


def _merge(
    url: str,
    options: RunOptions,
    measured: list[dict],
    picked: list[str],
    offsets: dict[str, ClockOffset],
    instant: float,
    plan: list,
    workers: dict[str, dict],
    scheduler: str,
    clock_tolerance_ms: float,
    lost: dict[int, str],
    interrupted: bool,
) -> Result:
    config = options.record(url)
    config.update(shards=len(plan), cluster=scheduler)
    shard_offsets = [offsets[picked[p["index"]]].offset_s for p in measured]
    result = merge_shards(url, config, measured, shard_offsets)
    result.interrupted = result.interrupted or interrupted
    figures = []
    for p in measured:
        addr = picked[p["index"]]
        o = offsets[addr]
        figures.append(
            shard_figures(
                p, addr, o.offset_s, o.uncertainty_s, instant + plan[p["index"]].start_offset_s
            )
        )
    skews = [abs(f["start_skew_ms"]) for f in figures]
    uncertain = [f["clock_uncertainty_ms"] for f in figures]
    warnings = []
    if max(skews + uncertain) > clock_tolerance_ms:
        warnings.append(
            f"shards started up to {max(skews):.1f} ms apart (clock uncertainty up to "
            f"{max(uncertain):.1f} ms), above the {clock_tolerance_ms:g} ms tolerance: "
            "sync the generator hosts' clocks (NTP/chrony)"
        )
    result.extras["shards"] = figures
    result.extras["cluster"] = {
        "scheduler": scheduler,
        "generator_hosts": sorted({workers[a].get("host", a) for a in picked}),
        "start_skew_ms_max": max(skews) if skews else 0.0,
        "warnings": warnings,
        "lost_shards": [
            {"index": i, "worker": picked[i], "reason": why} for i, why in sorted(lost.items())
        ],
    }
    return result


class ClusterRunner:
    """Many runs over one Client (a sweep's cells, a capacity search's steps), not one Client per
    run; called with loadbench.run()'s arguments. Generator CPU pinning is kept only for a
    LocalCluster (remote hosts have CPUs of their own). A run that lost a shard returns the other
    shards' result with the loss named in its extras["cluster"]["error"] (a sweep records it; a
    capacity search stops there, keeping its steps: a step cannot be judged at a rate it did not
    send)."""

    def __init__(
        self, cluster: Any, shards: Optional[int], start_delay: float = DEFAULT_START_DELAY_S
    ) -> None:
        self.cluster, self.shards, self.start_delay = cluster, shards, start_delay
        self.client, self._close = _client(cluster, shards or 2)
        workers = scheduler_identity(self.client).get("workers", {})
        self.generator_hosts = sorted({w.get("host", a) for a, w in workers.items()})

    def __call__(self, url: str, **kwargs: Any) -> Result:
        if self.cluster != "local":
            kwargs.pop("cpus", None)
        try:
            return run(
                url,
                cluster=self.client,
                shards=self.shards,
                start_delay=self.start_delay,
                **kwargs,
            )
        except ShardLostError as exc:
            if exc.result is None:
                raise
            exc.result.extras.setdefault("cluster", {})["error"] = str(exc)
            return exc.result

    def close(self) -> None:
        self._close()
