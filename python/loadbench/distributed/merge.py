"""Shard results merged exactly: counts summed, HDR histograms added bucket by bucket (the
merged percentiles are those of one histogram that recorded every request), timelines added
interval by interval, a load shape's stages stage by stage, and the window is the union of the
shards' windows."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..core.phases import PHASES
from ..core.result import LatencyHistogram, Result
from ..core.schedule import shape_stages


def add_histograms(histograms: Sequence[Optional[LatencyHistogram]]) -> Optional[LatencyHistogram]:
    present = [h for h in histograms if h is not None]
    if not present:
        return None
    first = present[0]
    for h in present[1:]:
        if (h.lowest, h.highest, h.significant_figures) != (
            first.lowest,
            first.highest,
            first.significant_figures,
        ):
            raise ValueError("histograms with different layouts cannot be added")
    length = max(len(h.counts) for h in present)
    counts = np.zeros(length, dtype=np.int64)
    for h in present:
        counts[: len(h.counts)] += h.counts
    filled = [h for h in present if h.count]
    min_us = min(h.min_us for h in filled) if filled else 0
    max_us = max(h.max_us for h in filled) if filled else 0
    return LatencyHistogram(
        counts, first.lowest, first.highest, first.significant_figures, min_us, max_us
    )


def _sum_lists(lists: list[list[int]]) -> list[int]:
    """Element-wise sums of equally long count lists (empty when any is: not measured there)."""
    if not lists or any(not counts for counts in lists):
        return []
    return [sum(column) for column in zip(*lists)]


def _sum_dicts(dicts: Sequence[dict]) -> dict:
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


def _merged_timeline(
    parts: Sequence[dict[str, Any]], layout: LatencyHistogram
) -> dict[str, np.ndarray]:
    """Interval i of the merged timeline is interval i of every shard (their windows start at
    one instant, up to the start skew each shard reports)."""
    n = max(len(p["intervals"]) for p in parts)
    responses = np.zeros(n, dtype=np.int64)
    errors = np.zeros(n, dtype=np.int64)
    for p in parts:
        rows = p["result"].get("timeline", [])
        for i, row in enumerate(rows[:n]):
            responses[i] += int(row["responses"])
            errors[i] += int(row["errors"])
    p50 = np.zeros(n, dtype=np.int64)
    p99 = np.zeros(n, dtype=np.int64)
    offsets, index, count = [0], [], []
    for i in range(n):
        hs = [
            LatencyHistogram.decode(
                p["intervals"][i][0], p["intervals"][i][1], p["intervals"][i][2]
            )
            for p in parts
            if i < len(p["intervals"])
        ]
        merged = add_histograms(hs) if hs else None
        if merged is not None and merged.count:
            p50[i] = int(merged.percentile(50))
            p99[i] = int(merged.percentile(99))
            nz = np.flatnonzero(merged.counts)
            nz = nz[nz < len(layout.counts)]
            index.extend(nz.tolist())
            count.extend(merged.counts[nz].tolist())
        offsets.append(len(index))
    return {
        "responses": responses,
        "errors": errors,
        "p50_us": p50,
        "p99_us": p99,
        "bucket_offsets": np.array(offsets, dtype=np.int64),
        "bucket_index": np.array(index, dtype=np.int64),
        "bucket_count": np.array(count, dtype=np.int64),
    }


def _merged_stages(parts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stage i of the merged shape is stage i of every shard (one instant, one clock): counts
    summed, latency histograms added - as one generator that sent the whole shape would read."""
    n = max((len(p.get("stages") or []) for p in parts), default=0)
    out = []
    for i in range(n):
        rows = [p["stages"][i] for p in parts if i < len(p.get("stages") or [])]
        counts = _sum_dicts([{k: v for k, v in row.items() if k != "latency"} for row in rows])
        latency = add_histograms([LatencyHistogram.decode(*row["latency"]) for row in rows])
        out.append({**counts, "latency": latency})
    return out


def merge_shards(
    url: str, config: dict[str, Any], parts: Sequence[dict[str, Any]], offsets_s: Sequence[float]
) -> Result:
    """`parts` as returned by run_shard; `offsets_s[i]` = shard i's worker clock - our clock."""
    results = [Result.from_dict(p["result"]) for p in parts]
    # Window edges on the client's clock: the engine's window opens warm-up after its start.
    starts = [
        p["started_wall"] - off + r.config.get("warmup_s", 0.0)
        for p, r, off in zip(parts, results, offsets_s)
    ]
    ends = [s + r.duration_s for s, r in zip(starts, results)]
    window = max(ends) - min(starts)
    latency = add_histograms([r.latency for r in results])
    merged = Result(
        url=url,
        config=config,
        duration_s=window,
        status_codes=_sum_dicts([r.status_codes for r in results]),
        errors=_sum_dicts([r.errors for r in results]),
        latency=latency,
        counters=_sum_dicts([r.counters for r in results]),
        streams_reset=_sum_dicts([r.streams_reset for r in results]),
        cpu_s=sum(r.cpu_s for r in results),
        threads=sum(r.threads for r in results),
        preconnected=sum(r.preconnected for r in results),
        interrupted=any(r.interrupted for r in results),
        first_error=next((r.first_error for r in results if r.first_error), ""),
        interval_s=results[0].interval_s,
        timeline_columns=_merged_timeline(parts, latency),
        open_loop=results[0].open_loop,
        target_rate=sum(r.target_rate for r in results),
        latency_uncorrected=add_histograms([r.latency_uncorrected for r in results]),
        lateness=add_histograms([r.lateness for r in results]),
        loop_lateness=add_histograms([r.loop_lateness for r in results]),
        phases={
            name: merged
            for name in PHASES
            if (merged := add_histograms([r.phases.get(name) for r in results])) is not None
        },
        pool=_sum_dicts([r.pool for r in results]),
        # each shard's own stream of gaps: their counts add (the audit compares distributions)
        due_gaps=_sum_lists([r.due_gaps for r in results]),
        send_gaps=_sum_lists([r.send_gaps for r in results]),
        stages=shape_stages(config, _merged_stages(parts), window),
    )
    return merged


def shard_figures(
    part: dict[str, Any], worker: str, offset_s: float, uncertainty_s: float, instant: float
) -> dict[str, Any]:
    """One shard's own figures for the merged result's `shards` list."""
    r = Result.from_dict(part["result"])
    return {
        "index": part["index"],
        "worker": worker,
        "host": part.get("host"),
        "connections": r.config.get("connections"),
        "requests": r.config.get("requests"),
        "rate": r.config.get("rate"),
        # its share of a load shape: the same curve at 1/N of the rate, or its part of each count
        "rate_schedule": r.config.get("rate_schedule"),
        "connections_schedule": r.config.get("connections_schedule"),
        "seed": r.config.get("seed"),
        "responses": r.responses,
        "errors": r.error_count,
        "unfinished": r.unfinished,
        "duration_s": r.duration_s,
        "rps": r.rps,
        "p50_us": r.latency.percentile(50),
        "p99_us": r.latency.percentile(99),
        "generator_cpu_s": r.cpu_s,
        # connections open at the instant: the window started on them (pre-connect)
        "preconnected": r.preconnected,
        "clock_offset_ms": offset_s * 1e3,
        "clock_uncertainty_ms": uncertainty_s * 1e3,
        # When the shard actually started, on the client's clock, after the instant it was given.
        "start_skew_ms": (part["started_wall"] - offset_s - instant) * 1e3,
    }
