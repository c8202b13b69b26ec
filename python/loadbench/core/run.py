"""`loadbench.run()`: one load run against a URL, driven by the native engine.

The engine runs on its own threads; Python only polls it with the GIL released, so Ctrl-C
stops the run and still returns what was measured. `start()` gives the running handle for
callers that want to poll progress themselves. What a run is asked to do is one
:class:`loadbench.core.options.RunOptions`; what it measured comes back as the engine's own
result struct and becomes a :class:`loadbench.Result`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Optional, Union

from . import _core
from .errors import ConfigError, LoadbenchError
from .limits import limited_by
from .options import Request, RunOptions, check_tls_library
from .prime import prime
from .profile import DEFAULT_CALL_GRAPH, DEFAULT_FREQUENCY_HZ, ProfiledWindow
from .result import LatencyHistogram, Result
from .sampler import Sampler, WindowEdges
from .schedule import shape_stages

POLL_INTERVAL_S = 0.1
OPTION_NAMES = tuple(f.name for f in fields(RunOptions))

__all__ = [
    "POLL_INTERVAL_S",
    "Request",
    "RunningLoad",
    "check_tls_library",
    "connect_ahead",
    "prepare",
    "run",
    "start",
]


def _histogram(h: Any) -> LatencyHistogram:
    return LatencyHistogram(h.counts, h.lowest, h.highest, h.significant_figures, h.min, h.max)


@dataclass
class RunningLoad:
    """A run in progress: poll `progress()`, `stop()` it, `wait()` for it, take its `result()`."""

    url: str
    config: dict
    engine: Any = field(repr=False)
    started_at: float = field(default_factory=time.monotonic)
    # A load shape's per-stage counts and latency histograms, as result() read them (a
    # distributed run's shard returns them, so the merged stages are exact)
    measured_stages: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def progress(self) -> dict[str, Any]:
        p = self.engine.progress()
        out = {
            "elapsed_s": p.elapsed_s,
            "warming_up": p.warming_up,
            "finished": p.finished,
            "responses": p.responses,
            "errors": p.errors,
            "duration_s": self.config.get("duration_s"),
            "requests": self.config.get("requests"),
            "warmup_s": self.config.get("warmup_s", 0.0),
        }
        measured = max(out["elapsed_s"] - out["warmup_s"], 0.0)
        out["rps"] = out["responses"] / measured if measured > 0 else 0.0
        return out

    def begin(self) -> None:
        """Start the clock of a run made by connect_ahead(): warm-up, then the window."""
        self.started_at = time.monotonic()
        self.engine.start()

    def wait(self, timeout: float) -> bool:
        return bool(self.engine.wait(timeout))

    def stop(self) -> None:
        self.engine.stop()

    def result(self) -> Result:
        try:
            raw = self.engine.result()
        except RuntimeError as exc:
            raise LoadbenchError(str(exc)) from None
        t = raw.totals
        self.measured_stages = [
            {
                **{k: v for k, v in s.items() if k != "latency_us"},
                "latency": _histogram(s["latency_us"]),
            }
            for s in t.stages
        ]
        return Result(
            url=self.url,
            config=self.config,
            duration_s=raw.duration_s,
            status_codes=t.status_codes,
            errors=t.errors,
            latency=_histogram(t.latency_us),
            counters={name: getattr(t, name) for name in _core.COUNTERS},
            streams_reset=t.streams_reset,
            cpu_s=raw.cpu_s,
            threads=raw.threads,
            preconnected=raw.preconnected,
            interrupted=raw.interrupted,
            first_error=t.first_error,
            interval_s=raw.interval_s,
            timeline_columns=raw.timeline,
            open_loop=raw.open_loop,
            target_rate=raw.target_rate,
            latency_uncorrected=_histogram(t.latency_uncorrected_us) if raw.open_loop else None,
            lateness=_histogram(t.lateness_us) if raw.open_loop else None,
            loop_lateness=_histogram(t.loop_lateness_us) if raw.open_loop else None,
            due_gaps=list(t.due_gaps) if raw.open_loop else [],
            send_gaps=list(t.send_gaps) if raw.open_loop else [],
            # the phases that happened in the window (no TLS phase over plain TCP, ...)
            phases={name: _histogram(h) for name, h in t.phases_us.items() if h.counts.any()},
            pool=(
                {
                    "start": int(self.config.get("connections") or 0),
                    "cap": raw.max_connections,
                    "size": raw.pool_size,
                }
                if raw.open_loop
                else {}
            ),
            stages=shape_stages(self.config, self.measured_stages, raw.duration_s),
            udp=_udp_figures(raw) if self.config.get("protocol") == "h3" else {},
        )


def _udp_figures(raw: Any) -> dict[str, Any]:
    t = raw.totals
    return {
        "receive_buffer": t.udp_receive_buffer,
        "send_buffer": t.udp_send_buffer,
        "gro": t.udp_gro,
        "drops_measured": raw.udp_drops_measured,
        "in_errors": raw.udp_in_errors,
        "rcvbuf_errors": raw.udp_rcvbuf_errors,
    }


def start(url: str, **options: Any) -> RunningLoad:
    """Start a run and return at once; see run() for the arguments. An open loop opens its pool
    first (connect_ahead's pre-connect, bounded by the run's timeout): its schedule starts on
    connections that are ready, so a server still accepting them does not leave the first
    requests queued behind connection set-up - a backlog that a pool at its Little's-law edge
    never drains, and that would read as seconds of the server's latency."""
    config, engine = _primed("start", url, options)
    return _begin(url, config, engine)


def _begin(url: str, config: dict[str, Any], engine: Any) -> RunningLoad:
    if _open_loop(config):
        engine.preconnect(float(config["timeout_s"]))
    engine.start()
    return RunningLoad(url=url, config=config, engine=engine)


def _open_loop(config: dict[str, Any]) -> bool:
    return "rate" in config


def connect_ahead(url: str, within: float, **options: Any) -> tuple[RunningLoad, int]:
    """Build a run and open its connections (TLS handshakes included), waiting at most
    ``within`` seconds, without starting its clock: ``begin()`` then starts the window on open
    connections, so it measures no connection setup (a distributed shard does this before the
    common instant). Returns the run and how many connections are open; one that is not (refused,
    too slow) is opened in the run as usual, and counted there."""
    config, engine = _primed("connect_ahead", url, options)
    opened = engine.preconnect(max(0.0, within))
    return RunningLoad(url=url, config=config, engine=engine), opened


def prepare(url: str, **options: Any) -> tuple[dict[str, Any], Any]:
    """Check a run's arguments (ConfigError with one clear message: RunOptions checks what only
    Python can, the engine the rest) and return (the JSON's `config` block, the engine's
    EngineConfig) without starting anything."""
    config, engine_config, _ = _checked(url, _known_options("prepare", options))
    return config, engine_config


def _primed(caller: str, url: str, options: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """(config block, Engine not yet started) of a run about to start, its server primed
    (core/prime.py) unless the run says not to: before its clock and any snapshot, so the
    priming connection is in no figure."""
    config, _, engine = _checked(url, _known_options(caller, options))
    if config["prime"]:
        prime(url, config["unix_socket"])
    return config, engine


def _checked(url: str, options: dict[str, Any]) -> tuple[dict[str, Any], Any, Any]:
    """(config block, EngineConfig, an Engine not yet started): building the engine is where it
    checks its configuration; it starts nothing until start()."""
    run_options = RunOptions(**options)
    engine_config = run_options.engine_config(url)
    try:
        engine = _core.Engine(engine_config)
    except ValueError as exc:
        message = str(exc)
        raise ConfigError(
            message[len("config: ") :] if message.startswith("config: ") else message
        ) from None
    return run_options.record(url), engine_config, engine


def run(
    url: str,
    *,
    progress: Optional[Callable[[dict], None]] = None,
    sample_pid: Optional[int] = None,
    profile: Union[str, os.PathLike, None] = None,
    profile_frequency: int = DEFAULT_FREQUENCY_HZ,
    profile_call_graph: str = DEFAULT_CALL_GRAPH,
    profile_keep_data: bool = True,
    **options: Any,
) -> Result:
    """Load `url` and return what was measured. The keywords are the fields of
    :class:`loadbench.core.options.RunOptions` (each with its help there):

    connections over threads (each thread one event loop); `duration` seconds of measured
    window, or exactly `requests` responses + errors; `warmup` seconds before the window,
    excluded from every figure. `headers` (dict, pairs or "Name: value" strings) and `body`
    (bytes/str, or a pathlib.Path to send a file) shape the one request; `requests_list`
    (Request objects or dicts with method/path/headers/body) is sent round-robin instead.
    `keepalive=False` opens a connection (and TLS handshake) per request. TLS certificates are
    not checked unless `verify=True`, `insecure=False` or a `cacert` file is given.
    `cpus` pins the generator threads. `rate` (requests per second, all threads together)
    switches to an open loop: requests are due on a constant or `arrival="poisson"` (seeded)
    schedule whatever the server does, latency counts from the intended send time (corrected
    for coordinated omission; `latency_uncorrected` is the service time), and the pool of
    `connections` grows up to `max_connections` when all are busy. A load shape instead of one
    rate: `rate_schedule` ("0s:1000, 30s:5000, 100s:0" or [(0, 1000), (30, 5000), ...]: the rate
    piecewise linear between the points, 0 s being the window's start) or `steps`
    ("1000:10s, 2000:10s" or [(1000, 10), (2000, 10)]); the run lasts as long as the shape, and
    the result has each stage's target, achieved rate and latency (`stages`).
    `connections_schedule` ("0s:10, 30s:100") shapes the closed loop instead: the active
    connections, piecewise linear between the points (k6's ramping VUs), opened once up to the
    most and parked open while a stage needs fewer. `protocol="h2"` speaks HTTP/2
    (h2c with prior knowledge for http://, ALPN h2 only for https:// - a server that does not
    select h2 fails the connection, never a fallback) with up to `streams` requests in flight per
    connection (h2load's -m). `protocol="h3"` speaks HTTP/3 over QUIC (https:// only, ALPN h3
    only, streams as for HTTP/2; a build with ngtcp2 and nghttp3). `progress`, if given, is called about every 0.1 s with
    a dict (elapsed_s, warming_up, responses, errors, rps, ...). Ctrl-C ends the run early and
    still returns the result (with `interrupted=True`).
    `ack_with_request=True` sends the TCP handshake's last ACK on the request (closed loop only)
    and `rst_close=True` closes with RST a connection the server has closed: fewer packets per
    new connection (docs/run.md, "Connection setup").
    `sample_pid` names the server process: its CPU time (with all its descendants), memory,
    fds and context switches, and the machine's steal and idle shares, are read from /proc
    at the edges of the measured window into the result's `server` block (cpu_us_per_req =
    server CPU between the two snapshots / the responses completed between them,
    `span_responses`: a snapshot taken late on a busy machine is divided by its own span).
    `profile` (a directory; needs `sample_pid`) samples the server's tree with `perf record`
    during the measured window only (`profile_frequency` Hz, `profile_call_graph` "fp" or
    "dwarf"; core/profile.py) and writes its folded stacks, flame graph and top functions there:
    the result's `profile` block, or `{"error": ...}` when perf is missing or refused - the run
    is measured either way. A profiled window is slower than a plain one: not the server's speed.
    """
    if profile is not None and sample_pid is None:
        raise ConfigError("--profile needs --sample-pid PID: the server process to profile")
    # primed before the sampler's first snapshot (without warm-up the window opens with the
    # engine)
    window = ProfiledWindow(profile, profile_frequency, profile_call_graph, profile_keep_data)
    config, engine = _primed("run", url, options)
    try:
        edges = _window_edges(
            sample_pid,
            config["warmup_s"],
            None if config["requests"] is not None else config["duration_s"],
            window,
        )
    except BaseException:
        window.abandon()
        raise
    try:
        result = _run_with_edges(edges, progress, lambda: _begin(url, config, engine))
    except BaseException:
        window.abandon()
        raise
    finally:
        if edges is not None:
            edges.close()  # the background series ends with the run, however it ends
    if profile is not None:
        server = result.extras.get("server") or {}
        result.extras["profile"] = window.finish(
            server.get("cpu_us_per_req"), edges.opens_at if edges is not None else None
        )
    return result


def _known_options(caller: str, options: dict[str, Any]) -> dict[str, Any]:
    for name in options:
        if name not in OPTION_NAMES:
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")
    return options


def _run_with_edges(
    edges: Optional[WindowEdges],
    progress: Optional[Callable[[dict], None]],
    begin: Callable[[], RunningLoad],
) -> Result:
    handle = begin()
    if edges is not None:
        engine = handle.engine
        edges.started(engine.progress().elapsed_s, lambda: engine.progress().completed)
    try:
        while not handle.wait(
            edges.wait_s(POLL_INTERVAL_S) if edges is not None else POLL_INTERVAL_S
        ):
            if edges is not None:
                edges.poll()
            if progress is not None:
                progress(handle.progress())
    except KeyboardInterrupt:
        handle.stop()  # keep what was measured
    except BaseException:
        handle.stop()
        raise
    if edges is None:
        return _with_limit(handle.result())
    edges.poll()
    result = handle.result()
    result.extras["server"] = edges.block(
        result.responses, connections=int(result.config.get("connections") or 0)
    )
    return _with_limit(result)


def _with_limit(result: Result) -> Result:
    """Attach the `limit` block: who limited the run (core/limits.py), from both sides' CPU and
    the open loop's lateness."""
    result.extras["limit"] = limited_by(result.to_dict()).to_dict()
    return result


def _window_edges(
    sample_pid: Optional[int],
    warmup: float,
    duration: Optional[float],
    profiled: Optional[ProfiledWindow] = None,
) -> Optional[WindowEdges]:
    """Opens the sampler before any load, so a bad pid fails first; without warm-up the
    window opens with the engine, so its first snapshot is taken now, on an idle server. A
    profiler attaches here too, its events off until the window opens."""
    if sample_pid is None:
        return None
    edges = WindowEdges(Sampler(sample_pid, tree=True), warmup, duration)
    if profiled is not None:
        profiled.attach(edges)
    edges.before_start()
    return edges
