"""`loadbench.run()`: one load run against a URL, driven by the native engine.

The engine runs on its own threads; Python only polls it with the GIL released, so Ctrl-C
stops the run and still returns what was measured. `start()` gives the running handle for
callers that want to poll progress themselves.
"""
from __future__ import annotations

import inspect
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import _core
from .errors import ConfigError, LoadbenchError
from .result import LatencyHistogram, Result
from .sampler import Sampler, WindowEdges


HeadersLike = Union[Mapping[str, str], Iterable[tuple[str, str]], Iterable[str], None]
BodyLike = Union[bytes, str, os.PathLike, None]
POLL_INTERVAL_S = 0.1


@dataclass
class Request:
    """One request template; a list of them is sent round-robin (scripting without callbacks)."""

    method: str = "GET"
    path: Optional[str] = None  # None: the URL's path + query
    headers: HeadersLike = None
    body: BodyLike = None


def normalize_headers(headers: HeadersLike) -> list[tuple[str, str]]:
    if headers is None:
        return []
    if isinstance(headers, (str, bytes)) or not isinstance(headers, (Mapping, Iterable)):
        raise ConfigError(f"headers must be a dict, (name, value) pairs or 'Name: value' strings, not {headers!r}")
    if isinstance(headers, Mapping):
        items = list(headers.items())
    else:
        items = []
        for h in headers:
            if isinstance(h, str):
                name, sep, value = h.partition(":")
                if not sep or not name.strip():
                    raise ConfigError(f"bad header {h!r}: expected 'Name: value'")
                items.append((name.strip(), value.strip()))
            else:
                name, value = h
                items.append((str(name), str(value)))
    for name, value in items:
        if not name or any(c in name for c in " \t\r\n:"):
            raise ConfigError(f"bad header name {name!r}")
        if "\r" in value or "\n" in value:
            raise ConfigError(f"header {name!r} has a line break in its value")
    return items


def read_body(body: BodyLike) -> bytes:
    """bytes and str are the body itself; a Path (os.PathLike) names a file to send."""
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, os.PathLike):
        try:
            return Path(body).read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read body file {os.fspath(body)!r}: {exc.strerror or exc}") from None
    raise ConfigError(f"body must be bytes, str or a path, not {type(body).__name__}")


def _as_request(item: Union[Request, Mapping[str, Any]]) -> Request:
    if isinstance(item, Request):
        return item
    if isinstance(item, Mapping):
        unknown = set(item) - {"method", "path", "headers", "body"}
        if unknown:
            raise ConfigError(f"unknown request keys {sorted(unknown)} (use method, path, headers, body)")
        return Request(**item)
    raise ConfigError(f"requests_list items must be Request or dict, not {type(item).__name__}")


def _check_cpus(cpus: Optional[Sequence[int]]) -> list[int]:
    if cpus is None:
        return []
    try:
        out = [int(c) for c in cpus]
    except (TypeError, ValueError):
        raise ConfigError(f"cpus must be a list of CPU numbers such as [0, 1], not {cpus!r}") from None
    if not out:
        raise ConfigError("cpus is empty")
    available = sorted(os.sched_getaffinity(0))
    for cpu in out:
        if cpu not in available:
            raise ConfigError(f"CPU {cpu} does not exist or is not available "
                              f"(available: {','.join(map(str, available))})")
    return out


def _number(name: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, not {value!r}") from None


def _histogram(h: Optional[dict]) -> Optional[LatencyHistogram]:
    if h is None:
        return None
    return LatencyHistogram(h["counts"], h["lowest"], h["highest"], h["significant_figures"], h["min"], h["max"])


@dataclass
class RunningLoad:
    """A run in progress: poll `progress()`, `stop()` it, `wait()` for it, take its `result()`."""

    url: str
    config: dict
    engine: Any = field(repr=False)
    started_at: float = field(default_factory=time.monotonic)

    def progress(self) -> dict[str, Any]:
        p = dict(self.engine.progress())
        p["duration_s"] = self.config.get("duration_s")
        p["requests"] = self.config.get("requests")
        p["warmup_s"] = self.config.get("warmup_s", 0.0)
        measured = max(p["elapsed_s"] - p["warmup_s"], 0.0)
        p["rps"] = p["responses"] / measured if measured > 0 else 0.0
        return p

    def wait(self, timeout: float) -> bool:
        return bool(self.engine.wait(timeout))

    def stop(self) -> None:
        self.engine.stop()

    def result(self) -> Result:
        try:
            raw = self.engine.result()
        except RuntimeError as exc:
            raise LoadbenchError(str(exc)) from None
        latency = _histogram(raw["histogram"])
        return Result(
            url=self.url, config=self.config, duration_s=raw["duration_s"], responses=raw["responses"],
            status_codes=dict(raw["status_codes"]), errors=dict(raw["errors"]), latency=latency,
            bytes_read=raw["bytes_read"], bytes_written=raw["bytes_written"],
            connections_opened=raw["connections_opened"], tls_handshakes=raw["tls_handshakes"],
            tls_resumed=raw.get("tls_resumed", 0), unfinished=raw.get("unfinished", 0), due=raw.get("due", 0),
            reconnects=raw["reconnects"], goaways=raw.get("goaways", 0), retried=raw.get("retried", 0),
            streams_reset=dict(raw.get("streams_reset", {})), cpu_s=raw["cpu_s"], threads=raw["threads"],
            interrupted=raw["interrupted"], first_error=raw["first_error"], interval_s=raw["interval_s"],
            timeline_columns=dict(raw["timeline"]), open_loop=raw["open_loop"],
            target_rate=raw.get("target_rate", 0.0), sends=raw.get("sends", 0), late_sends=raw.get("late_sends", 0),
            latency_uncorrected=_histogram(raw.get("histogram_uncorrected")), lateness=_histogram(raw.get("lateness")),
        )


def start(url: str, **options: Any) -> RunningLoad:
    """Start a run and return at once; see run() for the arguments."""
    _known_options("start", options)
    config, engine_kwargs = prepare(url, **options)
    try:
        engine = _core.Engine(**engine_kwargs)
    except ValueError as exc:
        message = str(exc)
        raise ConfigError(message[len("config: "):] if message.startswith("config: ") else message) from None
    engine.start()
    return RunningLoad(url=url, config=config, engine=engine)


# The generator's TLS libraries and what a build needs for each (OpenSSL is always built).
TLS_LIBRARIES = {
    "openssl": "apt-get install libssl-dev",
    "wolfssl": "apt-get install libwolfssl-dev",
    "rustls": "it is built by cargo from the Rust crate registry: put a Rust toolchain >= 1.78 (rustup) on PATH",
}


def check_tls_library(name: str, built: bool = True) -> None:
    """ConfigError unless `name` is one of the generator's TLS libraries and (with `built`) one
    this build has - the one rule for run(), start() and sweeps."""
    if name not in TLS_LIBRARIES:
        raise ConfigError(f"tls_library: {name!r} is not one of {', '.join(TLS_LIBRARIES)}")
    if built and name not in _core.tls_libraries():
        raise ConfigError(f"tls_library: this loadbench was built without {name} ({TLS_LIBRARIES[name]}, "
                          "then reinstall loadbench)")


def prepare(url: str, *, connections: int = 10, threads: int = 1, duration: Optional[float] = 10.0,
            requests: Optional[int] = None, warmup: float = 0.0, method: str = "GET", headers: HeadersLike = None,
            body: BodyLike = None, requests_list: Optional[Sequence[Union[Request, Mapping[str, Any]]]] = None,
            keepalive: bool = True, timeout: float = 10.0, insecure: bool = True, verify: bool = False,
            cacert: Union[str, os.PathLike, None] = None, tls_session_resumption: bool = False,
            tls_library: str = "openssl", ack_with_request: bool = False, rst_close: bool = False,
            cpus: Optional[Sequence[int]] = None, interval: float = 1.0, rate: Optional[float] = None,
            arrival: str = "constant", max_connections: Optional[int] = None,
            seed: int = 1, protocol: str = "http/1.1", streams: int = 1) -> tuple[dict[str, Any], dict[str, Any]]:
    """Check a run's arguments (ConfigError with one clear message) and return (config, the
    native engine's arguments) without starting anything."""
    if not isinstance(url, str) or not url:
        raise ConfigError("a URL is required, e.g. http://127.0.0.1:8080/")
    for name, value in (("connections", connections), ("threads", threads)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name} must be an integer, not {value!r}")
        if value > 2**31 - 1:
            raise ConfigError(f"{name} must be a sensible integer, not {value!r}")
    if requests is not None:
        if isinstance(requests, bool) or not isinstance(requests, int) or requests < 1:
            raise ConfigError(f"requests must be an integer >= 1, not {requests!r}")
        duration_s = 0.0
    else:
        if duration is None:
            raise ConfigError("give a duration (seconds) or a number of requests")
        duration_s = _number("duration", duration)
        if not duration_s > 0:
            raise ConfigError(f"duration must be > 0 seconds, not {duration!r}")
    warmup_s = _number("warmup", warmup)
    rate_value = 0.0
    if rate is not None:
        rate_value = _number("rate", rate)
        if not rate_value > 0:
            raise ConfigError(f"rate must be > 0 requests per second, not {rate!r}")
    if arrival not in ("constant", "poisson"):
        raise ConfigError(f"arrival must be 'constant' or 'poisson', not {arrival!r}")
    if max_connections is not None:
        if rate is None:
            raise ConfigError("max_connections needs an open-loop rate")
        if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < connections:
            raise ConfigError(f"max_connections must be an integer >= connections ({connections}), "
                              f"not {max_connections!r}")
        if max_connections > 2**31 - 1:
            raise ConfigError(f"max_connections must be a sensible integer, not {max_connections!r}")
    if protocol in ("h2", "http2", "HTTP/2", "http/2"):
        protocol = "h2"
    elif protocol in ("http/1.1", "HTTP/1.1", "h1"):
        protocol = "http/1.1"
    else:
        raise ConfigError(f"protocol must be 'http/1.1' or 'h2', not {protocol!r}")
    if isinstance(streams, bool) or not isinstance(streams, int) or not 1 <= streams <= 2**31 - 1:
        raise ConfigError(f"streams must be an integer >= 1, not {streams!r}")
    if streams > 1 and protocol != "h2":
        raise ConfigError("streams > 1 needs HTTP/2 (protocol='h2'): HTTP/1.1 carries one request at a time")
    timeout_s = _number("timeout", timeout)
    check_tls_library(tls_library)
    if tls_library == "wolfssl" and tls_session_resumption:
        raise ConfigError("TLS session resumption is implemented for tls_library='openssl' and 'rustls', "
                          "not 'wolfssl'")
    if ack_with_request and rate is not None:
        raise ConfigError("ack_with_request needs a closed loop: an open-loop pool opens connections ahead of "
                          "their requests, and the handshake's last ACK would wait for the delayed-ACK timer (40 ms)")
    if cacert is not None and not Path(cacert).is_file():
        raise ConfigError(f"CA file {os.fspath(cacert)!r} does not exist")
    templates = [Request(method, None, headers, body)] if requests_list is None else [_as_request(r) for r in requests_list]
    if not templates:
        raise ConfigError("requests_list is empty")
    for t in templates:
        if not isinstance(t.method, str):
            raise ConfigError(f"method must be a string such as GET or POST, not {t.method!r}")
        if t.path is not None and (not isinstance(t.path, str) or not t.path.startswith("/")):
            raise ConfigError(f"request path {t.path!r} must start with '/' (e.g. /echo?x=1)")
    wire = [(t.method.upper(), t.path or "", normalize_headers(t.headers), read_body(t.body)) for t in templates]
    tls_verify = bool(verify) or cacert is not None or not insecure
    cpu_list = _check_cpus(cpus)
    config = {
        "connections": connections, "threads": threads, "duration_s": duration_s if requests is None else None,
        "requests": requests, "warmup_s": warmup_s, "method": wire[0][0] if len(wire) == 1 else None,
        "request_templates": len(wire), "keepalive": bool(keepalive), "timeout_s": timeout_s,
        "tls_verify": tls_verify, "tls_session_resumption": bool(tls_session_resumption),
        "tls_library": tls_library, "ack_with_request": bool(ack_with_request), "rst_close": bool(rst_close),
        "cpus": cpu_list or None, "interval_s": float(interval),
        "protocol": protocol, "streams": streams,
    }
    if rate is not None:
        config.update(rate=rate_value, arrival=arrival, max_connections=max_connections or connections, seed=seed)
    engine_kwargs = dict(
        url=url, requests=wire, connections=connections, threads=threads, duration_s=duration_s,
        total_requests=requests or 0, warmup_s=warmup_s, timeout_s=timeout_s, keepalive=bool(keepalive),
        tls_verify=tls_verify, tls_cacert=os.fspath(cacert) if cacert is not None else "",
        tls_session_resumption=bool(tls_session_resumption), cpus=cpu_list, interval_s=float(interval),
        rate=rate_value, poisson=arrival == "poisson", seed=int(seed), max_connections=max_connections or 0,
        protocol=protocol, streams=streams, tls_library=tls_library, ack_with_request=bool(ack_with_request),
        rst_close=bool(rst_close))
    return config, engine_kwargs


def run(url: str, *, progress: Optional[Callable[[dict], None]] = None, sample_pid: Optional[int] = None,
        **options: Any) -> Result:
    """Load `url` and return what was measured.

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
    `connections` grows up to `max_connections` when all are busy. `protocol="h2"` speaks HTTP/2
    (h2c with prior knowledge for http://, ALPN h2 only for https:// - a server that does not
    select h2 fails the connection, never a fallback) with up to `streams` requests in flight per
    connection (h2load's -m). `progress`, if given, is called about every 0.1 s with
    a dict (elapsed_s, warming_up, responses, errors, rps, ...). Ctrl-C ends the run early and
    still returns the result (with `interrupted=True`).
    `ack_with_request=True` sends the TCP handshake's last ACK on the request (closed loop only)
    and `rst_close=True` closes with RST a connection the server has closed: fewer packets per
    new connection (README, "Connection setup").
    `sample_pid` names the server process: its CPU time (with all its descendants), memory,
    fds and context switches, and the machine's steal and idle shares, are read from /proc
    exactly at the edges of the measured window into the result's `server` block
    (cpu_us_per_req = server CPU in the window / exact responses).
    """
    given = {**_RUN_DEFAULTS, **_known_options("run", options)}
    edges = _window_edges(sample_pid, given["warmup"], None if given["requests"] is not None else given["duration"])
    try:
        return _run_with_edges(edges, progress, lambda: start(url, **options))
    finally:
        if edges is not None:
            edges.close()  # the background series ends with the run, however it ends


# prepare() holds the one list of run options and their defaults; start() and run() take the
# same keywords and show prepare's signature (help(), IDEs), so the list is written once.
_RUN_DEFAULTS = {name: p.default for name, p in inspect.signature(prepare).parameters.items()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY}
start.__signature__ = inspect.signature(prepare).replace(return_annotation=RunningLoad)  # type: ignore[attr-defined]
run.__signature__ = inspect.signature(prepare).replace(  # type: ignore[attr-defined]
    parameters=[*inspect.signature(prepare).parameters.values(),
                inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=None,
                                  annotation=Optional[Callable[[dict], None]]),
                inspect.Parameter("sample_pid", inspect.Parameter.KEYWORD_ONLY, default=None,
                                  annotation=Optional[int])],
    return_annotation=Result)


def _known_options(caller: str, options: dict[str, Any]) -> dict[str, Any]:
    for name in options:
        if name not in _RUN_DEFAULTS:
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")
    return options


def _run_with_edges(edges: Optional[WindowEdges], progress: Optional[Callable[[dict], None]],
                    begin: Callable[[], RunningLoad]) -> Result:
    handle = begin()
    if edges is not None:
        edges.started(handle.engine.progress()["elapsed_s"])
    try:
        while not handle.wait(edges.wait_s(POLL_INTERVAL_S) if edges is not None else POLL_INTERVAL_S):
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
        return handle.result()
    edges.poll()
    result = handle.result()
    result.extras["server"] = edges.block(result.responses)
    return result


def _window_edges(sample_pid: Optional[int], warmup: Any, duration: Any) -> Optional[WindowEdges]:
    """Opens the sampler before any load, so a bad pid fails first; without warm-up the
    window opens with the engine, so its first snapshot is taken now, on an idle server."""
    if sample_pid is None:
        return None
    edges = WindowEdges(Sampler(sample_pid, tree=True), _number("warmup", warmup),
                        _number("duration", duration) if duration is not None else None)
    edges.before_start()
    return edges
