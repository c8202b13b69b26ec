"""What one load run measured: exact counts, the latency histogram, the timeline, and the
generator's own cost. Plain data first: `to_dict()` / `to_json()` are the contract other
tools read (documented in docs/run.md, "Result JSON"); `from_json()` reads it back."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

import numpy as np

from . import _core, hdrlog
from .phases import PHASES
from .schedule import connections_schedule_of, integral, schedule_of
from .schedule_audit import audit_block, dense
from .summary import summary_lines

FORMAT = "loadbench.result/1"
SATURATION_THRESHOLD = 0.90  # generator threads busy above this share of the window
SUMMARY_PERCENTILES = (50.0, 90.0, 99.0, 99.9)


LATE_THRESHOLD_US = 1000  # a send more than this after its intended time is late (C++ kLateSendNs)


def _histogram_block(h: Optional[LatencyHistogram]) -> Optional[dict[str, Any]]:
    if h is None:
        return None
    return {
        "unit": "us",
        "lowest": h.lowest,
        "highest": h.highest,
        "significant_figures": h.significant_figures,
        "min": h.min_us,
        "max": h.max_us,
        "hdr": h.encode(),
    }


def _percentile_key(q: float) -> str:
    return f"p{q:g}"


@dataclass
class LatencyHistogram:
    """Latency in microseconds with HdrHistogram's exact bucket layout."""

    counts: np.ndarray
    lowest: int = 1
    highest: int = 3_600_000_000
    significant_figures: int = 3
    min_us: int = 0  # exact
    max_us: int = 0  # exact

    def __post_init__(self) -> None:
        self.counts = np.asarray(self.counts, dtype=np.int64)
        layout = hdrlog.Layout(self.lowest, self.highest, self.significant_figures)
        self._low, self._range = layout.index_values(len(self.counts))
        self._cumulative = np.cumsum(self.counts)
        # float64 on both sides, summed by einsum: np.dot of int64 with float64 takes a generic
        # loop, and of two float64 arrays it goes to OpenBLAS, whose threads wait for a core on
        # a busy 2-core machine (0.7 ms for 23k buckets; einsum 0.06) - and a report asks every
        # result for its mean and stdev
        self._mid = (self._low + (self._range >> 1)).astype(np.float64)
        self._weights = self.counts.astype(np.float64)

    @property
    def count(self) -> int:
        return int(self._cumulative[-1]) if len(self._cumulative) else 0

    @property
    def min(self) -> float:
        return float(self.min_us)

    @property
    def max(self) -> float:
        return float(self.max_us)

    @property
    def mean(self) -> float:
        if not self.count:
            return 0.0
        return float(np.einsum("i,i->", self._mid, self._weights) / self.count)

    @property
    def stdev(self) -> float:
        if not self.count:
            return 0.0
        deviation = (self._mid - self.mean) ** 2
        return float(np.sqrt(np.einsum("i,i->", deviation, self._weights) / self.count))

    def percentile(self, q: float) -> float:
        """HdrHistogram's value at percentile q (0..100), in microseconds."""
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"percentile must be within 0..100, got {q}")
        total = self.count
        if not total:
            return 0.0
        target = max(int(min(q, 100.0) * total / 100 + 0.5), 1)
        i = int(np.searchsorted(self._cumulative, target, side="left"))
        if q == 0:
            return float(self._low[i])
        return float(self._low[i] + self._range[i] - 1)

    def buckets(self) -> tuple[np.ndarray, np.ndarray]:
        """(lowest value of each non-empty bucket in us, its count), as numpy arrays."""
        nz = np.flatnonzero(self.counts)
        return self._low[nz].copy(), self.counts[nz].copy()

    def encode(self) -> str:
        """The standard compressed HdrHistogram V2 encoding ("HISTFAAA...")."""
        return hdrlog.encode(self.counts, self.lowest, self.highest, self.significant_figures)

    @classmethod
    def decode(cls, text: str, min_us: int = 0, max_us: int = 0) -> "LatencyHistogram":
        counts, layout = hdrlog.decode(text)
        return cls(
            counts, layout.lowest, layout.highest, layout.significant_figures, min_us, max_us
        )


# The engine's plain counters, in its order (core/generator/base/config.hpp, LOADBENCH_COUNTERS):
# responses, unfinished, bytes_read, ..., late_sends. A Result holds them in `counters` and
# answers each as an attribute (r.goaways); a counter the engine gains appears in the JSON by
# itself, after the ones LAYOUT places.
COUNTERS: tuple[str, ...] = tuple(_core.COUNTERS)
# written under "rate", for open-loop runs only (slot_waits only where the run measured it: the
# ones recorded before it have no loop_lateness either, and round-trip without it)
OPEN_LOOP_COUNTERS = (
    "due",
    "sends",
    "late_sends",
    "slot_waits",
    "warmup_dropped",
    "wakeups",
    "busy_work_ns",
)
# written under "quic" (without the prefix), for HTTP/3 runs only
QUIC_COUNTERS = (
    "quic_datagrams_sent",
    "quic_datagrams_received",
    "quic_send_calls",
    "quic_receive_calls",
)
# What ngtcp2 0.12 (Debian 12) does not count, said in the "quic" block beside a null.
QUIC_PACKETS_UNCOUNTED = (
    "ngtcp2 0.12 counts no QUIC packets: a datagram may coalesce several (the handshake's "
    "Initial and Handshake packets), so only datagrams are counted"
)
QUIC_LOSS_UNCOUNTED = (
    "ngtcp2 0.12 exposes no per-connection count of lost or retransmitted packets "
    "(ngtcp2_conn_stat has none); what the kernel dropped on receive is in kernel_drops"
)
# 0-RTT, per connection (--h3-0rtt): written under "quic" as zero_rtt {attempted, accepted, rejected}
QUIC_ZERO_RTT_COUNTERS = (
    "quic_zero_rtt_attempted",
    "quic_zero_rtt_accepted",
    "quic_zero_rtt_rejected",
)
UDP_DROPS_SCOPE = (
    "machine-wide /proc/net/snmp Udp and /proc/net/snmp6 Udp6 counters, from the window's start "
    "until the generator stopped: other UDP receivers on the machine count too"
)


@dataclass
class Result:
    """One run. Figures cover the measured window only (warm-up excluded from all of them)."""

    url: str
    config: dict
    duration_s: float
    status_codes: dict[int, int]
    errors: dict[str, int]
    latency: LatencyHistogram
    # Every plain counter of the engine by name (COUNTERS): responses, unfinished (requests of
    # the window without an outcome when the drain ended), bytes, connections, TLS handshakes,
    # reconnects, HTTP/2 GOAWAYs and re-sent refusals, open-loop due / sends / late_sends.
    counters: dict[str, int] = field(default_factory=dict)
    # HTTP/2 RST_STREAM frames received, by error code name.
    streams_reset: dict[str, int] = field(default_factory=dict)
    cpu_s: float = 0.0
    threads: int = 1
    # connections opened (TLS included) before the window's start instant (a distributed
    # shard's pre-connect): neither their setup nor their handshakes are in the figures
    preconnected: int = 0
    interrupted: bool = False
    first_error: str = ""
    interval_s: float = 1.0
    timeline_columns: dict[str, np.ndarray] = field(default_factory=dict)
    # Open loop (a target rate): `latency` counts from each request's intended send time
    # (coordinated-omission corrected); `latency_uncorrected` from its actual send.
    open_loop: bool = False
    target_rate: float = 0.0
    latency_uncorrected: Optional[LatencyHistogram] = None
    lateness: Optional[LatencyHistogram] = None
    # Open loop: when the generator's loop released each due request - its due time (its own
    # delay; the rest of `lateness` is the wait for a free connection), and the pool: `start`
    # (connections), `cap` (max_connections), `size` (what it held at the end: it never shrinks).
    # Both absent from results recorded before they were measured.
    loop_lateness: Optional[LatencyHistogram] = None
    pool: dict[str, int] = field(default_factory=dict)
    # Open loop, the schedule audit (core/schedule_audit.py): per-bucket counts of the gaps
    # between consecutive due times and between consecutive sends; empty before it was measured.
    due_gaps: list[int] = field(default_factory=list)
    send_gaps: list[int] = field(default_factory=list)
    # A load shape (config["rate_schedule"]): each stage's span, target, achieved rate, counts and
    # corrected latency, for the requests due in it (core/schedule.py, stage_blocks); along a
    # config["connections_schedule"], its connections and what the requests started in it met.
    stages: list[dict[str, Any]] = field(default_factory=list)
    # HTTP/3: the smallest UDP socket buffers a connection was granted (receive_buffer,
    # send_buffer, bytes), whether UDP GRO was on (gro) and the kernel's UDP receive drops (drops_measured, in_errors,
    # rcvbuf_errors); written into the "quic" block with the QUIC counters. zero_rtt_reason: read
    # from a result written before 0-RTT was counted, whose zero_rtt was null (written back so).
    udp: dict[str, Any] = field(default_factory=dict)
    # Where the time went (PHASES): a histogram (us) per phase that was measured - a new
    # connection's connect and TLS / QUIC handshake, a response's write, time to first byte and
    # transfer - under the window's rules; absent from results recorded before phases were.
    phases: dict[str, LatencyHistogram] = field(default_factory=dict)
    # Blocks other parts attach (e.g. "server" from the sampler); written into to_dict() as-is.
    extras: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> int:
        # only reached when no field or property has the name: the counters
        if name in COUNTERS or name in self.__dict__.get("counters", {}):
            return int(self.__dict__.get("counters", {}).get(name, 0))
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- derived figures -------------------------------------------------------------
    @property
    def rps(self) -> float:
        return self.responses / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def error_count(self) -> int:
        return int(sum(self.errors.values()))

    def percentile(self, q: float) -> float:
        """Latency at percentile q in microseconds."""
        return self.latency.percentile(q)

    @property
    def cpu_us_per_req(self) -> Optional[float]:
        """Generator CPU time per response, in microseconds."""
        return self.cpu_s * 1e6 / self.responses if self.responses else None

    @property
    def cpu_utilisation(self) -> float:
        """Share of the window the generator threads were on a CPU (0..1 per thread, averaged)."""
        if self.duration_s <= 0 or self.threads <= 0:
            return 0.0
        return self.cpu_s / (self.duration_s * self.threads)

    @property
    def schedule_audit(self) -> Optional[dict[str, Any]]:
        """Open loop: whether the sends followed the asked arrival process, with the gap counts
        behind the verdict (core/schedule_audit.py); None when no gap was counted."""
        return audit_block(self.due_gaps, self.send_gaps) if self.due_gaps else None

    @property
    def busy_polled(self) -> bool:
        """The open loop's threads polled without sleeping (core/busy_poll.py)."""
        return bool(self.config.get("busy_poll"))

    @property
    def work_share(self) -> Optional[float]:
        """Busy-poll: the share of the threads' window spent on passes that found work - the
        generator's load, where its CPU time is the whole core whatever the load (None: it slept
        between passes, and its CPU time is its load)."""
        if not self.busy_polled or self.duration_s <= 0 or self.threads <= 0:
            return None
        return self.busy_work_ns * 1e-9 / (self.duration_s * self.threads)

    @property
    def work_us_per_req(self) -> Optional[float]:
        """Busy-poll: the generator's working time per response, in microseconds."""
        if not self.busy_polled or not self.responses:
            return None
        return self.busy_work_ns * 1e-3 / self.responses

    @property
    def saturated(self) -> bool:
        """The generator, not the server, may have been the bottleneck: its threads were busy
        nearly the whole window (busy-poll: working, not polling, that long)."""
        load = self.work_share if self.busy_polled else self.cpu_utilisation
        return (load or 0.0) > SATURATION_THRESHOLD

    @property
    def in_flight(self) -> float:
        """Little's law: requests in flight = req/s x mean latency."""
        return self.rps * self.latency.mean / 1e6

    @property
    def connections_per_s(self) -> float:
        return self.connections_opened / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def tls_handshakes_per_s(self) -> float:
        return self.tls_handshakes / self.duration_s if self.duration_s > 0 else 0.0

    def timeline_arrays(self) -> dict[str, np.ndarray]:
        """The timeline as numpy columns (what `timeline` wraps in a DataFrame)."""
        cols = self.timeline_columns
        n = len(cols.get("responses", []))
        t = np.arange(n, dtype=np.float64) * self.interval_s
        length = np.minimum(self.interval_s, np.maximum(self.duration_s - t, 0.0))
        responses = np.asarray(cols.get("responses", np.zeros(n)), dtype=np.int64)
        safe = np.where(length > 0, length, 1.0)
        out = {
            "t_s": t,
            "interval_s": length,
            "responses": responses,
            "errors": np.asarray(cols.get("errors", np.zeros(n)), dtype=np.int64),
            "rps": np.where(length > 0, responses / safe, 0.0),
        }
        # a load shape: the schedule's mean over each interval, beside what was met
        for key, points in (
            ("target_rps", schedule_of(self.config)),
            ("connections", connections_schedule_of(self.config)),
        ):
            if points:
                out[key] = np.array(
                    [
                        integral(points, a, a + w) / w if w > 0 else 0.0
                        for a, w in zip(t.tolist(), length.tolist())
                    ],
                    dtype=np.float64,
                )
        out["p50_us"] = np.asarray(cols.get("p50_us", np.zeros(n)), dtype=np.int64)
        out["p99_us"] = np.asarray(cols.get("p99_us", np.zeros(n)), dtype=np.int64)
        return out

    @property
    def timeline(self):
        """One row per interval: t_s, interval_s, responses, errors, rps, (a rate schedule's
        target_rps, a connections schedule's mean connections,) p50_us, p99_us."""
        import pandas as pd

        return pd.DataFrame(self.timeline_arrays())

    @property
    def limit(self) -> Optional[dict[str, Any]]:
        """Who limited the run (core/limits.py: by, reason, each side's busy share, the
        server's CPU ceiling) - attached by loadbench.run; None on a result that has none."""
        return self.extras.get("limit")

    @property
    def achieved_rate(self) -> float:
        """Open loop: requests actually sent per second of the window."""
        return self.sends / self.duration_s if self.duration_s > 0 else 0.0

    def latency_summary(self, histogram: Optional[LatencyHistogram] = None) -> dict[str, float]:
        lat = histogram if histogram is not None else self.latency
        out = {
            "min": lat.min,
            "mean": round(lat.mean, 3),
            "stdev": round(lat.stdev, 3),
            "max": lat.max,
        }
        for q in SUMMARY_PERCENTILES:
            out[_percentile_key(q)] = lat.percentile(q)
        return out

    # -- plain data ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The Result JSON (docs/run.md, "Result JSON"): LAYOUT's keys in order, then the blocks other
        parts attached (extras)."""
        d: dict[str, Any] = {}
        for key, kind, source in LAYOUT:
            if kind == OPEN_LOOP and not self.open_loop:
                continue
            if kind == LOOP_LATENESS and self.loop_lateness is None:
                continue
            if kind == MEASURED_PHASES and not self.phases:
                continue
            if kind == HTTP3 and self.config.get("protocol") != "h3":
                continue
            if kind == SCHEDULED and not (
                schedule_of(self.config) or connections_schedule_of(self.config)
            ):
                continue
            if kind == COUNTERS_HERE:
                d.update(
                    {
                        name: self.counters.get(name, 0)
                        for name in COUNTERS
                        if name not in PLACED_COUNTERS
                        and name not in OPEN_LOOP_COUNTERS
                        and name not in QUIC_COUNTERS
                        and name not in QUIC_ZERO_RTT_COUNTERS
                    }
                )
                continue
            d[key] = source(self)
        d.update(self.extras)
        return d

    def _timeline_rows(self) -> list[dict[str, Any]]:
        cols = self.timeline_arrays()
        floats = ("t_s", "interval_s", "rps", "target_rps", "connections")
        return [
            {k: (float(v[i]) if k in floats else int(v[i])) for k, v in cols.items()}
            for i in range(len(cols["t_s"]))
        ]

    def to_json(self, path: Union[str, Path, None] = None, indent: Optional[int] = 2) -> str:
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Result":
        """A Result read back from its JSON (to_dict's inverse for every stored figure; derived
        ones - rps, in_flight, percentiles - are recomputed, blocks LAYOUT does not know are
        kept as extras)."""
        h = d["histogram"]
        timeline = d.get("timeline", [])
        rate = d.get("rate") or {}
        audit = rate.get("schedule_audit")
        gen = d.get("generator", {})
        quic = d.get("quic") or {}
        counters = {
            name: int(d.get(name, 0))
            for name in COUNTERS
            if name not in OPEN_LOOP_COUNTERS
            and name not in QUIC_COUNTERS
            and name not in QUIC_ZERO_RTT_COUNTERS
        }
        counters.update({name: int(rate.get(name, 0)) for name in OPEN_LOOP_COUNTERS})
        counters.update({name: int(quic.get(name[len("quic_") :], 0)) for name in QUIC_COUNTERS})
        zero_rtt = quic.get("zero_rtt") or {}  # null in results from before 0-RTT
        counters.update(
            {
                name: int(zero_rtt.get(name[len("quic_zero_rtt_") :], 0))
                for name in QUIC_ZERO_RTT_COUNTERS
            }
        )
        drops = quic.get("kernel_drops") or {}
        udp = (
            {
                "receive_buffer": int(quic.get("udp_receive_buffer", 0)),
                "send_buffer": int(quic.get("udp_send_buffer", 0)),
                "gro": bool(quic.get("udp_gro")),
                "drops_measured": drops.get("in_errors") is not None,
                "in_errors": int(drops.get("in_errors") or 0),
                "rcvbuf_errors": int(drops.get("rcvbuf_errors") or 0),
            }
            if quic
            else {}
        )
        if quic and quic.get("zero_rtt") is None and "zero_rtt_reason" in quic:
            # written before 0-RTT was counted: kept as it was (null and its reason)
            udp["zero_rtt_reason"] = quic["zero_rtt_reason"]

        def hist(key: str) -> Optional[LatencyHistogram]:
            block = d.get(key)
            if not block:
                return None
            return LatencyHistogram.decode(
                block["hdr"], int(block.get("min", 0)), int(block.get("max", 0))
            )

        return cls(
            url=d["url"],
            config=d.get("config", {}),
            duration_s=float(d["duration_s"]),
            status_codes={int(k): int(v) for k, v in d.get("status_codes", {}).items()},
            errors={k: int(v) for k, v in d.get("errors", {}).items()},
            latency=LatencyHistogram.decode(h["hdr"], int(h.get("min", 0)), int(h.get("max", 0))),
            counters=counters,
            streams_reset={str(k): int(v) for k, v in (d.get("streams_reset") or {}).items()},
            cpu_s=float(gen.get("cpu_s", 0.0)),
            threads=int(gen.get("threads", d.get("config", {}).get("threads", 1))),
            preconnected=int(gen.get("preconnected", 0)),
            interrupted=bool(d.get("interrupted", False)),
            first_error=d.get("first_error", ""),
            interval_s=float(d.get("interval_s", 1.0)),
            timeline_columns={
                k: np.array([row[k] for row in timeline], dtype=np.int64)
                for k in ("responses", "errors", "p50_us", "p99_us")
            },
            open_loop="rate" in d,
            target_rate=float(rate.get("target", 0.0)),
            latency_uncorrected=hist("histogram_uncorrected"),
            lateness=hist("histogram_lateness"),
            loop_lateness=hist("histogram_loop_lateness"),
            phases={
                name: LatencyHistogram.decode(
                    block["hdr"], int(block.get("min", 0)), int(block.get("max", 0))
                )
                for name, block in (d.get("histogram_phases") or {}).items()
            },
            pool={k: int(v) for k, v in (rate.get("pool") or {}).items()},
            due_gaps=dense(audit["due_gaps"]) if audit else [],
            send_gaps=dense(audit["send_gaps"]) if audit else [],
            stages=list(d.get("stages") or []),
            udp=udp,
            extras={k: v for k, v in d.items() if k not in KNOWN_KEYS},
        )

    @classmethod
    def from_json(cls, source: Union[str, Path]) -> "Result":
        """Read a result from a JSON string or a path to a JSON file."""
        text = str(source)
        if not text.lstrip().startswith("{"):
            text = Path(source).read_text()
        return cls.from_dict(json.loads(text))

    # -- HdrHistogram log ---------------------------------------------------------------
    def interval_histograms(self) -> Optional[list[LatencyHistogram]]:
        """One latency histogram per timeline interval (None once read back from JSON, which
        keeps only the whole window's histogram)."""
        cols = self.timeline_columns
        if "bucket_offsets" not in cols:
            return None
        offsets, index, count = cols["bucket_offsets"], cols["bucket_index"], cols["bucket_count"]
        out = []
        for i in range(len(offsets) - 1):
            counts = np.zeros(len(self.latency.counts), dtype=np.int64)
            sl = slice(int(offsets[i]), int(offsets[i + 1]))
            counts[index[sl]] = count[sl]
            h = LatencyHistogram(
                counts, self.latency.lowest, self.latency.highest, self.latency.significant_figures
            )
            if h.count:
                h.min_us = int(h._low[np.flatnonzero(counts)[0]])
                last = np.flatnonzero(counts)[-1]
                h.max_us = int(h._low[last] + h._range[last] - 1)
            out.append(h)
        return out

    def to_hdr_log(self, path: Union[str, Path]) -> Path:
        """Write the latency as a standard HdrHistogram interval log (microsecond values;
        readable by HistogramLogReader / HistogramLogAnalyzer): one line per timeline
        interval, or one line for the whole window when the intervals are not available."""
        per_interval = self.interval_histograms()
        if per_interval:
            lines = [
                (float(t), float(length), h.encode(), h.max / 1000.0)
                for t, length, h in zip(
                    self.timeline_arrays()["t_s"],
                    self.timeline_arrays()["interval_s"],
                    per_interval,
                )
            ]
        else:
            lines = [(0.0, self.duration_s, self.latency.encode(), self.latency.max / 1000.0)]
        return hdrlog.write_log(
            path, lines, comment=f"loadbench {self.url} latency in microseconds"
        )

    # -- display --------------------------------------------------------------------------
    def summary_lines(self) -> list[str]:
        return summary_lines(self)

    def __repr__(self) -> str:
        lat = self.latency
        return (
            f"<Result {self.url}: {self.responses:,} responses in {self.duration_s:.3f} s = {self.rps:,.1f} req/s, "
            f"p50 {lat.percentile(50) / 1000:.3f} ms, p99 {lat.percentile(99) / 1000:.3f} ms, "
            f"errors {self.error_count:,}{', interrupted' if self.interrupted else ''}>"
        )

    def _repr_html_(self) -> str:
        rows = [
            (label, value)
            for label, value in (
                line.split("  ", 1) if "  " in line else (line, "")
                for line in (s.strip() for s in self.summary_lines()[1:])
            )
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
            f"{html.escape(v.strip())}</td></tr>"
            for k, v in rows
        )
        return f"<div><b>{html.escape(self.summary_lines()[0])}</b><table>{body}</table></div>"


# -- the Result JSON, written once ----------------------------------------------------------------
# Each entry: the key, when it is written (ALWAYS, OPEN_LOOP only for open-loop runs, SCHEDULED
# only for runs along a rate schedule, or the place of the counters LAYOUT does not name), and where
# its value comes from. to_dict() walks it in
# order; from_dict() reads the stored figures back and keeps every other key as an extra.
ALWAYS, OPEN_LOOP, COUNTERS_HERE = "always", "open loop", "counters"
SCHEDULED = "load shape"  # written for runs along a rate or connections schedule only
HTTP3 = "h3"  # written for HTTP/3 runs only
LOOP_LATENESS = "loop lateness"  # open-loop runs that measured it (not those recorded before)
MEASURED_PHASES = "phases"  # runs that measured a phase (not those recorded before phases were)


def _zero_rtt(r: Result) -> dict[str, Any]:
    """0-RTT's connections (--h3-0rtt), or - read from a result written before they were
    counted - the null and its reason it had."""
    if "zero_rtt_reason" in r.udp:
        return {"zero_rtt": None, "zero_rtt_reason": r.udp["zero_rtt_reason"]}
    return {
        "zero_rtt": {
            "attempted": r.counters.get("quic_zero_rtt_attempted", 0),
            "accepted": r.counters.get("quic_zero_rtt_accepted", 0),
            "rejected": r.counters.get("quic_zero_rtt_rejected", 0),
        }
    }


def _quic_block(r: Result) -> dict[str, Any]:
    measured = bool(r.udp.get("drops_measured"))
    return {
        "datagrams_sent": r.counters.get("quic_datagrams_sent", 0),
        "datagrams_received": r.counters.get("quic_datagrams_received", 0),
        "send_calls": r.counters.get("quic_send_calls", 0),
        "receive_calls": r.counters.get("quic_receive_calls", 0),
        "udp_gro": bool(r.udp.get("gro")),
        "packets_sent": None,
        "packets_received": None,
        "packets_reason": QUIC_PACKETS_UNCOUNTED,
        "lost": None,
        "retransmitted": None,
        "loss_reason": QUIC_LOSS_UNCOUNTED,
        "handshakes": r.counters.get("tls_handshakes", 0),
        **_zero_rtt(r),
        "udp_receive_buffer": int(r.udp.get("receive_buffer", 0)),
        "udp_send_buffer": int(r.udp.get("send_buffer", 0)),
        "kernel_drops": {
            "in_errors": int(r.udp.get("in_errors", 0)) if measured else None,
            "rcvbuf_errors": int(r.udp.get("rcvbuf_errors", 0)) if measured else None,
            "scope": UDP_DROPS_SCOPE if measured else "not measured: /proc/net/snmp unreadable",
        },
    }


def _send_delays(r: Result) -> dict[str, Any]:
    """Who delayed the open loop's sends: its own loop (`loop_lateness_us`) or the wait for a free
    connection (`slot_waits`), and the pool they waited for. Absent from results recorded before
    these were measured, so those round-trip unchanged."""
    if r.loop_lateness is None:
        return {}
    return {
        "loop_lateness_us": _lateness(r, r.loop_lateness),
        "slot_waits": r.slot_waits,
        "warmup_dropped": r.warmup_dropped,
        "pool": dict(r.pool),
        # measured since issue 45; absent (0) from results recorded before
        **({"wakeups": r.wakeups} if r.wakeups else {}),
        # busy-poll (issue 59): the time of the passes that found work
        **({"busy_work_ns": r.busy_work_ns} if r.busy_polled else {}),
        # did the sends follow the asked arrivals (issue 59; absent before it was measured)
        **({"schedule_audit": audit} if (audit := r.schedule_audit) else {}),
    }


def _phases_block(r: Result) -> dict[str, dict[str, Any]]:
    """Each measured phase's count and percentiles (us), in PHASES' order."""
    return {
        name: {"count": h.count, **r.latency_summary(h)}
        for name in PHASES
        if (h := r.phases.get(name)) is not None
    }


def _counter(name: str) -> Callable[[Result], int]:
    return lambda r: r.counters.get(name, 0)


def _lateness(r: Result, h: Optional[LatencyHistogram] = None) -> dict[str, Any]:
    h = r.lateness if h is None else h
    if h is None:
        return {}
    return {
        "p50": h.percentile(50),
        "p90": h.percentile(90),
        "p99": h.percentile(99),
        "p99.9": h.percentile(99.9),
        "max": h.max,
    }


LAYOUT: list[tuple[str, str, Callable[[Result], Any]]] = [
    ("format", ALWAYS, lambda r: FORMAT),
    ("url", ALWAYS, lambda r: r.url),
    ("config", ALWAYS, lambda r: dict(r.config)),
    ("duration_s", ALWAYS, lambda r: r.duration_s),
    ("responses", ALWAYS, _counter("responses")),
    ("unfinished", ALWAYS, _counter("unfinished")),
    ("rps", ALWAYS, lambda r: r.rps),
    ("status_codes", ALWAYS, lambda r: {str(k): v for k, v in sorted(r.status_codes.items())}),
    ("errors", ALWAYS, lambda r: dict(r.errors)),
    ("first_error", ALWAYS, lambda r: r.first_error),
    ("latency_us", ALWAYS, lambda r: r.latency_summary()),
    ("in_flight", ALWAYS, lambda r: r.in_flight),
    ("bytes_read", ALWAYS, _counter("bytes_read")),
    ("bytes_written", ALWAYS, _counter("bytes_written")),
    ("connections_opened", ALWAYS, _counter("connections_opened")),
    ("connections_per_s", ALWAYS, lambda r: r.connections_per_s),
    ("tls_handshakes", ALWAYS, _counter("tls_handshakes")),
    ("tls_handshakes_per_s", ALWAYS, lambda r: r.tls_handshakes_per_s),
    ("tls_resumed", ALWAYS, _counter("tls_resumed")),
    ("reconnects", ALWAYS, _counter("reconnects")),
    ("goaways", ALWAYS, _counter("goaways")),
    ("retried", ALWAYS, _counter("retried")),
    ("", COUNTERS_HERE, lambda r: None),  # a counter LAYOUT does not name yet
    ("streams_reset", ALWAYS, lambda r: dict(r.streams_reset)),
    ("quic", HTTP3, _quic_block),
    ("interrupted", ALWAYS, lambda r: r.interrupted),
    (
        "generator",
        ALWAYS,
        lambda r: {
            "threads": r.threads,
            "cpu_s": r.cpu_s,
            "cpu_us_per_req": r.cpu_us_per_req,
            "utilisation": r.cpu_utilisation,
            "saturated": r.saturated,
            **({"preconnected": r.preconnected} if r.preconnected else {}),
            # busy-poll: cpu_s is the whole core; the share spent on work beside it
            **(
                {"work_share": r.work_share, "work_us_per_req": r.work_us_per_req}
                if r.busy_polled
                else {}
            ),
        },
    ),
    ("histogram", ALWAYS, lambda r: _histogram_block(r.latency)),
    ("interval_s", ALWAYS, lambda r: r.interval_s),
    ("timeline", ALWAYS, lambda r: r._timeline_rows()),
    ("latency_uncorrected_us", OPEN_LOOP, lambda r: r.latency_summary(r.latency_uncorrected)),
    (
        "rate",
        OPEN_LOOP,
        lambda r: {
            "target": r.target_rate,
            "achieved": r.achieved_rate,
            "arrival": r.config.get("arrival", "constant"),
            "due": r.due,
            "sends": r.sends,
            "late_sends": r.late_sends,
            "late_threshold_us": LATE_THRESHOLD_US,
            "lateness_us": _lateness(r),
            **_send_delays(r),
        },
    ),
    ("stages", SCHEDULED, lambda r: [dict(stage) for stage in r.stages]),
    ("histogram_uncorrected", OPEN_LOOP, lambda r: _histogram_block(r.latency_uncorrected)),
    ("histogram_lateness", OPEN_LOOP, lambda r: _histogram_block(r.lateness)),
    ("histogram_loop_lateness", LOOP_LATENESS, lambda r: _histogram_block(r.loop_lateness)),
    ("phases", MEASURED_PHASES, _phases_block),
    (
        "histogram_phases",
        MEASURED_PHASES,
        lambda r: {name: _histogram_block(h) for name, h in r.phases.items()},
    ),
]
PLACED_COUNTERS = frozenset(name for name in COUNTERS if any(key == name for key, _, _ in LAYOUT))
KNOWN_KEYS = frozenset(key for key, _, _ in LAYOUT if key) | frozenset(COUNTERS)
