"""One tidy row per cell and repeat of a results folder (:func:`flatten`): the raw Result JSON
of a record turned into the numbers the report model folds - req/s, latency percentiles, CPU per
response, memory, outcomes, the outside-CPU share, Little's law, and who limited the repeat
(:func:`limit_of`: the run's stored ``limit`` block, else core/limits.py's rule on its CPU).
Pure: nothing here reads files.
"""

from __future__ import annotations

from typing import Any, Optional

from ..core import analysis
from ..core.limits import BY, Limit, limited_by


def _get(d: Optional[dict], *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _ms(us: Optional[float]) -> Optional[float]:
    return None if us is None else us / 1000.0


def _mib(kib: Optional[float]) -> Optional[float]:
    return kib / 1024 if kib else None


# Peak memory, most honest first: the window's sampled peak of the tree's summed RSS (the run's
# 0.1 s series), the sweep's background series around the cell, and last (results from before
# those existed) the sum of each process's lifetime VmHWM - an upper bound that adds peaks of
# different moments and counts shared pages once per process.
PEAK_MEMORY_SOURCES = (
    ("server", "rss_max_kib", "sampled peak of the tree's RSS in the window"),
    ("sampled", "rss_kib_max", "sampled peak of the tree's RSS around the cell"),
    ("server", "rss_peak_kib", "sum of lifetime VmHWM (upper bound)"),
    ("sampled", "rss_peak_kib", "sum of lifetime VmHWM (upper bound)"),
)


def peak_memory(server: dict, sampled: dict) -> tuple[Optional[float], Optional[str]]:
    """(peak RSS in KiB, what it is) from a record's `server` block and sampler totals."""
    blocks = {"server": server, "sampled": sampled}
    for block, key, what in PEAK_MEMORY_SOURCES:
        value = blocks[block].get(key) if isinstance(blocks[block], dict) else None
        if value:
            return float(value), what
    return None, None


def limit_of(record: dict, server_cores: Optional[int] = None) -> Limit:
    """Who limited a closed- or open-loop repeat: the result's stored ``limit`` block (written
    by runs that know it), else :func:`loadbench.core.limits.limited_by` on the result, with the
    server's cores from its block, the record's pinned CPUs or the sweep's."""
    result = record.get("result") or {}
    stored = result.get("limit")
    if isinstance(stored, dict) and stored.get("by") in BY:
        fields = {k: stored.get(k) for k in Limit.__dataclass_fields__}
        fields["reason"] = fields.get("reason") or ""
        return Limit(**fields)
    cores = pinned_cores(record.get("server"), "cpus") or server_cores
    return limited_by(result, server_cores=cores)


def pinned_cores(block: Optional[dict], key: str = "server_cpus") -> Optional[int]:
    """How many CPUs a server was pinned to: the length of ``block[key]`` (a record's server
    ``cpus``, sweep.json's ``server_cpus``), None when it does not say."""
    pinned = block.get(key) if isinstance(block, dict) else None
    return len(pinned) if isinstance(pinned, list) and pinned else None


def load_of(record: dict) -> tuple[Optional[int], Optional[int]]:
    """(connections, load_pct) of a record. Open-loop records written before ``load_pct``
    existed kept the percentage in ``connections``; they are read the new way."""
    if record.get("mode") == "open":
        pct = record.get("load_pct")
        if pct is None:
            pct = record.get("connections")
        return (record.get("connections") if "load_pct" in record else None), pct
    return record.get("connections"), None


def phase_columns(result: dict) -> dict[str, Optional[float]]:
    """``phase_<name>_p50_us`` and ``phase_<name>_p99_us`` of each phase the result measured
    (its ``phases`` block; none for results recorded before phases were)."""
    out: dict[str, Optional[float]] = {}
    for name, block in (result.get("phases") or {}).items():
        if isinstance(block, dict) and block.get("count"):
            out[f"phase_{name}_p50_us"] = block.get("p50")
            out[f"phase_{name}_p99_us"] = block.get("p99")
    return out


def flatten(
    record: dict,
    cores: Optional[int] = None,
    contended_share: float = analysis.CONTENDED_SHARE,
    server_cores: Optional[int] = None,
) -> dict:
    """One tidy row per cell and repeat (the shape pandas, the report and the notebook use).

    ``cores``: the machine's logical cores (for the outside-CPU share; environment.json).
    ``server_cores``: the CPUs the sweep pinned servers to (len of sweep.json's server_cpus),
    for results whose server block predates its ``cores``."""
    result = record.get("result") or {}
    latency = result.get("latency_us") or {}
    rps, mean_us = result.get("rps"), latency.get("mean")
    duration, responses = result.get("duration_s"), result.get("responses") or 0
    server = result.get("server") or {}
    sampled = record.get("sampler") or {}
    connections, load_pct = load_of(record)
    mode = record.get("mode")
    inflight = (
        analysis.littles_law_inflight(rps, mean_us)
        if rps is not None and mean_us is not None
        else None
    )
    allocations = server.get("allocations") or {}
    cpu_us = server.get("cpu_us_per_req")
    if cpu_us is None and server.get("cpu_s") is not None and responses:
        cpu_us = analysis.cpu_us_per_request(server["cpu_s"], responses)
    error_kinds = {
        k: int(v)
        for k, v in (result.get("errors") or {}).items()
        if isinstance(v, (int, float)) and v
    }
    if result.get("unfinished"):
        # requests of the window with no outcome when the drain ended: as bad as an error for
        # ranking (a frozen server must not look clean), named apart in the footnotes
        error_kinds["unfinished"] = int(result["unfinished"])
    errors = sum(error_kinds.values())
    codes = {str(k): int(v) for k, v in (result.get("status_codes") or {}).items()}
    non2xx = analysis.non_2xx(codes)
    generator_cpu_s = _get(result, "generator", "cpu_s")
    cores = record.get("machine_cores") or cores
    outside = analysis.outside_share(
        server, cores, generator_cpu_s, record.get("irq_share"), duration
    )
    if "contended" in record:
        contended = bool(record["contended"])
    else:  # a record from before the contended rule: judged on its window now
        contended = outside is not None and outside > contended_share
    reconnects = int(result.get("reconnects") or 0)
    # Connection setup: each side's CPU per new connection (http) / full handshake (https). A
    # cell where the generator's exceeds the server's measured the generator (§).
    opened = result.get("connections_opened") if mode == "connect" else None
    gen_us_per_conn = analysis.cpu_us_per_connection(generator_cpu_s, opened)
    server_us_per_conn = analysis.cpu_us_per_connection(server.get("cpu_s"), opened)
    setup_bound = analysis.is_setup_generator_bound(gen_us_per_conn, server_us_per_conn)
    limit = limit_of(record, server_cores) if mode in ("closed", "open") and result else None
    cause = (
        analysis.underdriven_cause(inflight, connections, errors, reconnects)
        if mode == "closed" and record.get("status") == "ok"
        else None
    )
    return {
        # where the time went (core/phases.py): phase_<name>_p50_us / _p99_us per measured phase
        **phase_columns(result),
        "id": record.get("id"),
        "target": record.get("target"),
        "protocol": record.get("protocol"),
        "streams": record.get("streams") or 1,
        "workload": record.get("workload"),
        "mode": mode,
        "connections": connections,
        "load_pct": load_pct,
        "load": load_pct if mode == "open" else connections,
        "repeat": record.get("repeat"),
        "block": record.get("block"),  # the sweep block (a fresh server process), when in blocks
        "status": record.get("status"),
        "error": record.get("error"),
        "rps": rps,
        "responses": responses,
        "duration_s": duration,
        "errors": errors,
        "unfinished": int(result.get("unfinished") or 0),
        "error_kinds": error_kinds,
        "status_codes": codes,
        "non2xx": non2xx,
        "bad_share": analysis.bad_share(non2xx, errors, responses) if result else None,
        "p50_ms": _ms(latency.get("p50")),
        "p90_ms": _ms(latency.get("p90")),
        "p99_ms": _ms(latency.get("p99")),
        "p999_ms": _ms(latency.get("p99.9")),
        "max_ms": _ms(latency.get("max")),
        "mean_ms": _ms(mean_us),
        "inflight": inflight,
        "reconnects": reconnects,
        "starved": cause is not None,
        "starved_cause": cause,
        "server_cpu_us_per_req": cpu_us,
        # heap allocations (a sweep with allocations = true): per response, or why not
        "allocs_per_req": allocations.get("calls_per_req"),
        "alloc_bytes_per_req": allocations.get("bytes_per_req"),
        "allocs_na": allocations.get("na"),
        # the kernel's side of the server's cost per response (the sampler, on by default): system
        # calls (or why the kernel refused to count them) and context switches
        "syscalls_per_req": server.get("syscalls_per_req"),
        "syscalls_na": server.get("syscalls_na"),
        "ctx_switches_per_req": server.get("ctx_switches_per_req"),
        "executables": server.get("executables") or [],
        "server_version": (record.get("server") or {}).get("version"),
        # the server process the repeat ran on (memory that grows across one, report/behaviour.py)
        "server_pid": (record.get("server") or {}).get("pid"),
        "rss_peak_mib": _mib(peak_memory(server, sampled)[0]),
        "rss_source": peak_memory(server, sampled)[1],
        "pss_mib": _mib(server.get("pss_kib")),
        "steal_share": _get(server, "machine", "steal_share"),
        "idle_share": _get(server, "machine", "idle_share"),
        "outside_share": outside,
        "contended": contended,
        "outside_source": "processes" if server.get("others_cpu_s") is not None else "busy time",
        "reruns": int(record.get("reruns") or 0),
        # generator-bound at first, measured again with generator threads on spare CPUs: these
        "generator_widened_cpus": (record.get("generator_headroom") or {}).get("cpus"),
        "gate": record.get("gate"),
        # share of the server's pinned CPUs it used in the window (1.0 = all of them busy)
        "server_cpu_share": (
            server["cpu_s"] / duration / len(_get(record, "server", "cpus") or [1])
            if server.get("cpu_s") is not None and duration
            else None
        ),
        "wall_s": record.get("wall_s"),
        "started": record.get("started"),
        "generator_cpu_s": generator_cpu_s,
        "generator_cpu_us_per_req": _get(result, "generator", "cpu_us_per_req"),
        # who limited the repeat (core/limits.py): server, generator (§) or pool (¶); the
        # server's CPU ceiling and busy share beside it
        "limit_by": limit.by if limit else None,
        "limit_reason": limit.reason if limit else None,
        "ceiling_rps": limit.ceiling_rps if limit else None,
        "server_busy": limit.server_busy if limit else None,
        "generator_bound": (limit is not None and limit.by == "generator") or setup_bound,
        "pool_bound": limit is not None and limit.by == "pool",
        "setup_generator_bound": setup_bound,
        "generator_cpu_us_per_conn": gen_us_per_conn,
        "server_cpu_us_per_conn": server_us_per_conn,
        "generator_utilisation": _get(result, "generator", "utilisation"),
        # busy-poll: the generator's core is whole; the share of it spent working
        "generator_work_share": _get(result, "generator", "work_share"),
        "conn_per_s": (
            analysis.connection_rate(result.get("connections_opened", 0), duration)
            if duration
            else None
        ),
        "connections_opened": result.get("connections_opened"),
        # open loop: latency_us is corrected (from the intended send time), this one is not
        "p99_uncorrected_ms": _ms(_get(result, "latency_uncorrected_us", "p99")),
        "target_rate": _get(result, "rate", "target"),
        # an open-loop cell judged by the capacity search's rule against the sweep's objectives
        # (sweep/group.py _judge): True / False, None where not judged
        "slo_passed": (record.get("objectives") or {}).get("passed"),
        "late_sends": _get(result, "rate", "late_sends"),
        "sends": _get(result, "rate", "sends"),
    }


def frame(records: list[dict], cores: Optional[int] = None):
    """The tidy pandas DataFrame of a results list (one row per cell and repeat)."""
    import pandas as pd

    return pd.DataFrame([flatten(r, cores) for r in records])
