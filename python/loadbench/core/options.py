"""The options of one run, written once: :class:`RunOptions`.

    options = RunOptions(connections=50, duration=10, warmup=2)
    loadbench.run(url, **fields)            # run() and start() build one from their keywords
    options.engine_config(url)              # the native engine's EngineConfig, field by field

An option the engine takes unchanged is declared once, in C++ (LOADBENCH_ENGINE_OPTIONS in
core/generator/base/config.hpp: type, name, default, help), and named here by ``engine_option``: its
default and help come from that declaration, and its EngineConfig assignment, its key in the
result's ``config`` block, its `run`/`capacity` flag (cli/_load_flags.py) and its key in a sweep's
``[run]`` table all follow from the one line. The options Python translates (protocol ->
h2/h3, verify/cacert -> tls_verify, ...) are plain ``option`` fields with their own help.

Each field carries its help text and its type as a sweep file or a command line writes it
(``FIELD_HELP``, ``field_type``): `loadbench run`'s flags, `loadbench.run()`'s keywords, a
sweep's cells and a distributed run's shards all pass a RunOptions, so a parameter has one name,
one default and one explanation. The rules the engine enforces (ranges, combinations such as
streams > 1 without HTTP/2, a pipeline with HTTP/2 or without keep-alive, the open-file limit) are checked once, in C++
(core/generator/engine.cpp), and arrive as ConfigError; what only Python can check - types, the
header syntax, a body file, the TLS library this build has - is checked here.
"""

from __future__ import annotations

import os
import resource
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _core
from .busy_poll import LoopChoice, choose_loop
from .errors import ConfigError
from .prime import primes
from .protocols import WIRE_ALIASES
from .schedule import (
    Point,
    ScheduleLike,
    parse_connections_schedule,
    parse_rate_schedule,
    parse_steps,
    steps_to_points,
)

HeadersLike = Union[Mapping[str, str], Iterable[tuple[str, str]], Iterable[str], None]
BodyLike = Union[bytes, str, os.PathLike, None]

# The generator's TLS libraries and what a build needs for each (OpenSSL is always built).
TLS_LIBRARIES = {
    "openssl": "apt-get install libssl-dev",
    "wolfssl": "apt-get install libwolfssl-dev",
    "rustls": "it is built by cargo from the Rust crate registry: put a Rust toolchain >= 1.78 (rustup) on PATH",
}


class _DefaultSeconds(float):
    """The default duration, told apart from one the caller gave: a rate schedule sets the
    duration when none was given, and refuses one that differs from it."""


class _DefaultCount(int):
    """The default connection count, told apart from one the caller gave: a connections
    schedule sets it to its most, and refuses one that differs."""


# An open loop's pool grows (when every connection is busy and requests wait) up to this many
# times its first connections unless max_connections says otherwise: enough for a server whose
# latency doubles at the rate to be offered it on time (Little's law: in flight = rate x latency),
# bounded so an overloaded server is not buried in connections. The run says when sends still
# waited for a connection (the `limit` block: "pool").
POOL_GROWTH = 2
DEFAULT_DURATION = _DefaultSeconds(10.0)
# descriptors the engine keeps for everything else in the process (kFdsReserved in engine.cpp)
FDS_RESERVED = 64
DEFAULT_CONNECTIONS = _DefaultCount(10)


def option(default: Any, help: str, kind: str) -> Any:
    """A RunOptions field: its default, what it means, and its type as a file or flag writes it
    ("integer", "seconds", "string", ...)."""
    return field(default=default, metadata={"help": help, "type": kind})


# The engine's options as C++ declares them (LOADBENCH_ENGINE_OPTIONS in
# core/generator/base/config.hpp): name -> (default, help).
ENGINE_OPTIONS = {name: (default, help) for name, default, help in _core.ENGINE_OPTIONS}


def engine_option(
    name: str,
    kind: str,
    *flags: str,
    engine: Optional[str] = None,
    metavar: Optional[str] = None,
    note: str = "",
    choices: Optional[Sequence[str]] = None,
    recorded: str = "always",
    what: Optional[str] = None,
) -> Any:
    """A RunOptions field the engine takes unchanged: its default and help are the engine's own
    declaration (``engine``: its EngineConfig name when it differs, e.g. warmup -> warmup_s).
    From this one line come its EngineConfig assignment, its key in the result's ``config``
    block (under the engine's name; ``recorded="open"``: open-loop runs only), its `loadbench
    run` / `capacity` flag (``flags``, with ``metavar``, ``choices`` and a ``note`` after the
    help; none: no flag) and its key in a sweep's ``[run]`` table."""
    target = engine or name
    default, help = ENGINE_OPTIONS[target]
    return field(
        default=default,
        metadata={
            "help": help,
            "type": kind,
            "engine": target,
            "flags": flags,
            "metavar": metavar,
            "note": note,
            "choices": tuple(choices) if choices else None,
            "recorded": recorded,
            "what": what or name.replace("_", " "),  # its name in a message: "bad timeout '5x'"
        },
    )


@dataclass
class Request:
    """One request template; a list of them is sent round-robin (scripting without callbacks)."""

    method: str = "GET"
    path: Optional[str] = None  # None: the URL's path + query
    headers: HeadersLike = None
    body: BodyLike = None


@dataclass
class RunOptions:
    """Everything one run is asked to do, but its URL (see the module docstring)."""

    connections: int = option(
        DEFAULT_CONNECTIONS,
        "concurrent connections (closed loop); the open loop's starting pool; a connections "
        "schedule sets it to its most",
        "integer",
    )
    threads: int = engine_option("threads", "integer", "-t", "--threads")
    duration: Optional[float] = option(
        DEFAULT_DURATION,
        "measured window in seconds (unless `requests` is given; a rate schedule sets it)",
        "seconds",
    )
    requests: Optional[int] = option(
        None, "exactly this many requests (responses + errors) instead of a duration", "integer"
    )
    warmup: float = engine_option(
        "warmup", "seconds", "--warmup", engine="warmup_s", metavar="SPAN", note="e.g. 2s",
        what="warm-up",
    )  # fmt: skip
    method: str = option("GET", "HTTP method", "string")
    headers: HeadersLike = option(
        None,
        "headers: a dict, (name, value) pairs or 'Name: value' strings",
        "list of 'Name: value'",
    )
    body: BodyLike = option(
        None, "request body: bytes, text, or a path of a file to send", "string or path"
    )
    requests_list: Optional[Sequence[Union[Request, Mapping[str, Any]]]] = option(
        None,
        "request templates sent round-robin instead of one (method, path, headers, body)",
        "list of tables",
    )
    keepalive: bool = engine_option(
        "keepalive", "boolean", "--disable-keepalive", note="this flag sets it false"
    )
    timeout: float = engine_option(
        "timeout", "seconds", "--timeout", engine="timeout_s", metavar="SPAN", note="e.g. 10s"
    )
    insecure: bool = option(
        True, "do not check TLS certificates (the default, like oha --insecure)", "boolean"
    )
    verify: bool = option(False, "check TLS certificates against the system CAs", "boolean")
    cacert: Union[str, os.PathLike, None] = option(
        None, "check TLS certificates against this CA file", "path"
    )
    tls_session_resumption: bool = engine_option(
        "tls_session_resumption", "boolean", "--tls-resume"
    )
    quic_early_data: bool = engine_option(
        "quic_early_data", "boolean", "--h3-0rtt", note="needs --h3 --tls-resume"
    )
    tls_library: str = engine_option(
        "tls_library", "string", "--tls-library", choices=TLS_LIBRARIES
    )
    ack_with_request: bool = engine_option("ack_with_request", "boolean", "--ack-with-request")
    rst_close: bool = engine_option("rst_close", "boolean", "--rst-close")
    prime: bool = option(
        True,
        "TCP: open and close one connection before the run, as wrk's address check does (a "
        "server's state can change at its first client close: core/prime.py)",
        "boolean",
    )
    unix_socket: Union[str, os.PathLike, None] = option(
        None, "connect to this unix socket; the URL gives Host, path and scheme", "path"
    )
    cpus: Optional[Sequence[int]] = option(
        None, "pin the generator threads to these CPUs", "list of integers"
    )
    interval: float = engine_option(
        "interval", "seconds", "--interval", engine="interval_s", metavar="SPAN", note="e.g. 500ms"
    )
    rate: Optional[float] = option(
        None,
        "open loop: requests per second in total, latency corrected for coordinated omission",
        "number",
    )
    rate_schedule: ScheduleLike = option(
        None,
        "open loop along a load shape: the total rate, piecewise linear between TIME:RATE "
        "points, e.g. '0s:1000, 30s:5000, 90s:5000, 100s:0' (0 s is the window's start, the "
        "warm-up runs at the first rate, the run lasts to the last point; two points at one time "
        "are a step; the same connections serve every stage)",
        "string or list of (seconds, rate)",
    )
    steps: ScheduleLike = option(
        None,
        "open loop in steps: each RATE held for its DURATION, e.g. '1000:10s, 2000:10s' "
        "(a rate schedule of flat stages)",
        "string or list of (rate, seconds)",
    )
    connections_schedule: ScheduleLike = option(
        None,
        "closed loop with a changing number of active connections (k6's ramping VUs), piecewise "
        "linear between TIME:CONNECTIONS points, e.g. '0s:10, 30s:100, 60s:100' (0 s is the "
        "window's start, the warm-up runs with the first count, the run lasts to the last point); "
        "connections are opened once, up to the most, and parked open while a stage needs fewer",
        "string or list of (seconds, connections)",
    )
    arrival: str = option("constant", "open-loop arrivals: constant or poisson", "string")
    max_connections: Optional[int] = option(
        None,
        "open loop: grow the pool up to this many connections when all are busy (default: "
        f"{POOL_GROWTH} x connections, within the open-file limit)",
        "integer",
    )
    seed: int = engine_option("seed", "integer", "--seed", recorded="open")
    send_batch: float = engine_option(
        "send_batch",
        "seconds",
        "--send-batch",
        engine="send_batch_s",
        metavar="SPAN",
        note="e.g. 1ms; oha's timer sends in 1 ms steps",
        recorded="open",
    )
    busy_poll: Optional[bool] = option(
        None,
        "open loop: each generator thread polls and never sleeps (its sends go out microseconds "
        "after they fall due; it takes its whole CPU); default: busy-poll when the generator is "
        "pinned (cpus) to CPUs it has to itself - one per thread, no other task pinned there, at "
        "most 20 % busy just before the run - else the sleeping tick",
        "boolean",
    )
    batch_reads: bool = engine_option(
        "batch_reads",
        "boolean",
        "--no-batch-reads",
        note="this flag sets it false",
        recorded="open",
    )
    protocol: str = option(
        "http/1.1",
        "http/1.1, h2 (h2c with prior knowledge for http://, ALPN h2 only for https://), or h3: "
        "HTTP/3 over QUIC, https:// only (ALPN h3 only; needs a build with ngtcp2 and nghttp3)",
        "string",
    )
    streams: int = engine_option(
        "streams", "integer", "-p", "--streams", metavar="N", note="-m is --method here, as in oha"
    )
    h2_window_bits: int = engine_option(
        "h2_window_bits", "integer", "--h2-window-bits", metavar="N"
    )
    pipeline: int = engine_option(
        "pipeline",
        "integer",
        "--pipeline",
        metavar="N",
        note="TechEmpower's plaintext test uses 16",
    )

    def __post_init__(self) -> None:
        """The checks only Python can make; the engine checks ranges and combinations."""
        for name in ("connections", "threads"):
            _integer(name, getattr(self, name))
        if self.requests is not None:
            if (
                isinstance(self.requests, bool)
                or not isinstance(self.requests, int)
                or self.requests < 1
            ):
                raise ConfigError(f"requests must be an integer >= 1, not {self.requests!r}")
        self._check_schedule()
        if self.requests is None:
            if self.duration is None:
                raise ConfigError("give a duration (seconds) or a number of requests")
            if not isinstance(self.duration, _DefaultSeconds):  # kept as given: but() keeps it
                self.duration = _number("duration", self.duration)
        self.warmup, self.timeout = _number("warmup", self.warmup), _number("timeout", self.timeout)
        self.interval = _number("interval", self.interval)
        self.send_batch = _number("send_batch", self.send_batch)  # its range: the engine's check
        if self.rate is not None:
            self.rate = _number("rate", self.rate)
            if not self.rate > 0:
                raise ConfigError(f"rate must be > 0 requests per second, not {self.rate!r}")
        if self.arrival not in ("constant", "poisson"):
            raise ConfigError(f"arrival must be 'constant' or 'poisson', not {self.arrival!r}")
        if self.max_connections is not None:
            _integer("max_connections", self.max_connections)
            if not self.open_loop:
                raise ConfigError("max_connections needs an open-loop rate")
        if self.protocol not in WIRE_ALIASES:
            raise ConfigError(f"protocol must be 'http/1.1', 'h2' or 'h3', not {self.protocol!r}")
        self.protocol = WIRE_ALIASES[self.protocol]
        _integer("streams", self.streams)
        _integer("pipeline", self.pipeline)
        check_tls_library(self.tls_library)
        if self.tls_library == "wolfssl" and self.tls_session_resumption:
            raise ConfigError(
                "TLS session resumption is implemented for tls_library='openssl' and 'rustls', "
                "not 'wolfssl'"
            )
        if self.cacert is not None and not Path(self.cacert).is_file():
            raise ConfigError(f"CA file {os.fspath(self.cacert)!r} does not exist")
        self.cpus = _cpu_list(self.cpus)
        if self.busy_poll is not None and not isinstance(self.busy_poll, bool):
            raise ConfigError(f"busy_poll must be true, false or unset, not {self.busy_poll!r}")
        # refuses what cannot work (busy-poll on a closed loop, threads sharing a CPU); the
        # machine is looked at once, when the engine is configured (loop_choice)
        choose_loop(self.busy_poll, self.open_loop, self.cpus, int(self.threads), measure=False)
        if self.unix_socket is not None:
            if not isinstance(self.unix_socket, (str, os.PathLike)) or not os.fspath(
                self.unix_socket
            ):
                raise ConfigError(f"unix_socket must be a socket path, not {self.unix_socket!r}")
            self.unix_socket = os.fspath(self.unix_socket)

    def _check_schedule(self) -> None:
        """rate_schedule, steps and connections_schedule read into points; the duration (and
        with connections_schedule the connection count) follows the schedule."""
        if self.connections_schedule is not None:
            if self.rate is not None or self.rate_schedule is not None or self.steps is not None:
                raise ConfigError(
                    "connections_schedule shapes the closed loop: give no rate, rate_schedule or "
                    "steps with it (an open loop's connections follow its rate)"
                )
            self.connections_schedule = parse_connections_schedule(self.connections_schedule)
            most = int(max((n for _, n in self.connections_schedule), default=0))
            if isinstance(self.connections, _DefaultCount):
                self.connections = max(most, 1)  # 0 everywhere: the engine says it sends nothing
            elif self.connections != most and self.connections_schedule:
                raise ConfigError(
                    f"the connections schedule opens at most {most} connections but connections "
                    f"is {self.connections!r}: leave connections out, the schedule sets it"
                )
            self._duration_from(self.connections_schedule)
            return
        if self.rate_schedule is None and self.steps is None:
            return
        if self.rate_schedule is not None and self.steps is not None:
            raise ConfigError("give either rate_schedule or steps, not both")
        if self.rate is not None:
            raise ConfigError(
                "give either a rate or a rate schedule (rate_schedule, steps), not both"
            )
        if self.steps is not None:
            self.steps = parse_steps(self.steps)
        else:
            self.rate_schedule = parse_rate_schedule(self.rate_schedule)
        self._duration_from(self.schedule_points or [])

    def _duration_from(self, points: list[Point]) -> None:
        """A schedule sets the window's length: to its last point."""
        if self.requests is not None or not points:
            return  # the engine says why (no request count with a schedule; two points at least)
        end = points[-1][0]
        if self.duration is None or isinstance(self.duration, _DefaultSeconds):
            self.duration = end
        elif abs(_number("duration", self.duration) - end) <= 1e-9:
            self.duration = end
        else:
            raise ConfigError(
                f"the rate schedule lasts {end:g} s but the duration is "
                f"{_number('duration', self.duration):g} s: leave the duration out, the schedule "
                "sets it"
            )

    @property
    def schedule_points(self) -> Optional[list[Point]]:
        """The load shape as (seconds, rate) points, or None for a constant rate."""
        if self.steps is not None:
            return steps_to_points(self.steps)
        if self.rate_schedule is not None:
            return list(self.rate_schedule)
        return None

    @property
    def open_loop(self) -> bool:
        return self.rate is not None or self.schedule_points is not None

    # -- what the engine gets ----------------------------------------------------------
    def templates(self) -> list[Request]:
        if self.requests_list is None:
            return [Request(self.method, None, self.headers, self.body)]
        templates = [_as_request(r) for r in self.requests_list]
        if not templates:
            raise ConfigError("requests_list is empty")
        return templates

    def engine_config(self, url: str) -> Any:
        """The native engine's EngineConfig for ``url`` (core/generator/base/config.hpp)."""
        if not isinstance(url, str) or not url:
            raise ConfigError("a URL is required, e.g. http://127.0.0.1:8080/")
        c = _core.EngineConfig()
        c.url = url
        c.requests = [_wire(t) for t in self.templates()]
        for engine, value, _ in self._passed_through():
            setattr(c, engine, value)
        c.connections = int(self.connections)
        c.duration_s = 0.0 if self.requests is not None else float(self.duration)
        c.total_requests = self.requests or 0
        c.tls_verify = self.tls_verify
        c.tls_cacert = os.fspath(self.cacert) if self.cacert is not None else ""
        c.unix_socket = self.unix_socket or ""
        c.cpus = list(self.cpus or [])
        c.rate = self.rate or 0.0
        c.rate_schedule = self.schedule_points or []
        c.connections_schedule = list(self.connections_schedule or [])
        c.poisson = self.arrival == "poisson"
        c.busy_poll = self.loop_choice().busy_poll
        c.max_connections = self.pool_cap
        c.h2 = self.protocol == "h2"
        c.h3 = self.protocol == "h3"
        return c

    def _passed_through(self) -> list[tuple[str, Any, str]]:
        """(EngineConfig name, value as the engine holds it, when it is recorded) of every
        engine_option field: what engine_config() sets and record() writes."""
        return [
            (f.metadata["engine"], _as_engine(getattr(self, f.name), f.metadata["type"]),
             f.metadata["recorded"])
            for f in fields(self)
            if "engine" in f.metadata
        ]  # fmt: skip

    def loop_choice(self) -> LoopChoice:
        """busy-poll or the sleeping tick (core/busy_poll.py), chosen once per RunOptions: the
        engine runs what the result's config block records."""
        choice = self.__dict__.get("_loop_choice")
        if choice is None:
            choice = choose_loop(self.busy_poll, self.open_loop, self.cpus, int(self.threads))
            self.__dict__["_loop_choice"] = choice
        return choice

    @property
    def pool_cap(self) -> int:
        """The most connections an open loop's pool may hold (0 for a closed loop): the
        max_connections given, else POOL_GROWTH x connections within the open-file limit."""
        if not self.open_loop:
            return 0
        if self.max_connections:
            return int(self.max_connections)
        connections = int(self.connections)
        grown = POOL_GROWTH * connections
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY:
            grown = min(grown, soft - FDS_RESERVED)
        return max(connections, grown)

    @property
    def tls_verify(self) -> bool:
        return bool(self.verify) or self.cacert is not None or not self.insecure

    def record(self, url: Optional[str] = None) -> dict[str, Any]:
        """The `config` block of the Result JSON: what the run was asked to do (``url``: a
        unix:PATH URL's socket is recorded as unix_socket too)."""
        templates = self.templates()
        out = {
            "connections": int(self.connections),
            "duration_s": float(self.duration) if self.requests is None else None,
            "requests": self.requests,
            "method": templates[0].method.upper() if len(templates) == 1 else None,
            "request_templates": len(templates),
            "tls_verify": self.tls_verify,
            "prime": bool(self.prime) and primes(self.protocol),
            "unix_socket": self.unix_socket or _unix_path(url),
            "cpus": list(self.cpus) if self.cpus else None,
            "protocol": self.protocol,
        }
        for engine, value, recorded in self._passed_through():  # under the engine's names
            if self.open_loop or recorded != "open":
                out[engine] = value
        if self.open_loop:
            out.update(rate=self.rate, arrival=self.arrival, max_connections=self.pool_cap)
            choice = self.loop_choice()
            out.update(busy_poll=choice.busy_poll, loop=choice.why)
            if choice.warning:
                out["loop_warning"] = choice.warning
        points = self.schedule_points
        if points is not None:
            # the load shape as points, whichever way it was given (steps: as given, too)
            out["rate_schedule"] = [[t, r] for t, r in points]
            if self.steps is not None:
                out["steps"] = [[r, seconds] for r, seconds in self.steps]
        if self.connections_schedule is not None:
            out["connections_schedule"] = [[t, n] for t, n in self.connections_schedule]
        return out

    def changed(self) -> dict[str, Any]:
        """The fields that differ from their defaults (a call that says only what it asks for)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.default is not MISSING and getattr(self, f.name) != f.default
        }

    def but(self, **changes: Any) -> "RunOptions":
        """A copy with ``changes`` (checked again)."""
        return replace(self, **changes)


FIELD_HELP = {f.name: f.metadata["help"] for f in fields(RunOptions)}
# RunOptions field -> the EngineConfig field it is passed to unchanged (engine_option)
PASSED_THROUGH = {
    f.name: f.metadata["engine"] for f in fields(RunOptions) if "engine" in f.metadata
}


def field_type(name: str) -> str:
    """How a sweep file or a flag writes the option ``name`` ("integer", "seconds", ...)."""
    return next(f.metadata["type"] for f in fields(RunOptions) if f.name == name)


def check_tls_library(name: str, built: bool = True) -> None:
    """ConfigError unless `name` is one of the generator's TLS libraries and (with `built`) one
    this build has - the one rule for run(), start() and sweeps."""
    if name not in TLS_LIBRARIES:
        raise ConfigError(f"tls_library: {name!r} is not one of {', '.join(TLS_LIBRARIES)}")
    if built and name not in _core.tls_libraries():
        raise ConfigError(
            f"tls_library: this loadbench was built without {name} ({TLS_LIBRARIES[name]}, "
            "then reinstall loadbench)"
        )


# -- Python-side checks and conversions ---------------------------------------------------------
def _integer(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer, not {value!r}")
    if value > 2**31 - 1:
        raise ConfigError(f"{name} must be a sensible integer, not {value!r}")


def _as_engine(value: Any, kind: str) -> Any:
    """A passed-through option's value as the engine's field holds it (its checked type)."""
    if kind == "boolean":
        return bool(value)
    if kind == "seconds":
        return float(value)
    if kind == "integer":
        return int(value)
    return value


def _number(name: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, not {value!r}") from None


def _unix_path(url: Optional[str]) -> Optional[str]:
    return url[5:] if isinstance(url, str) and url[:5].lower() == "unix:" else None


def _cpu_list(cpus: Optional[Sequence[int]]) -> Optional[list[int]]:
    if cpus is None:
        return None
    try:
        out = [int(c) for c in cpus]
    except (TypeError, ValueError):
        raise ConfigError(
            f"cpus must be a list of CPU numbers such as [0, 1], not {cpus!r}"
        ) from None
    if not out:
        raise ConfigError("cpus is empty")
    return out


def normalize_headers(headers: HeadersLike) -> list[tuple[str, str]]:
    if headers is None:
        return []
    if isinstance(headers, (str, bytes)) or not isinstance(headers, (Mapping, Iterable)):
        raise ConfigError(
            f"headers must be a dict, (name, value) pairs or 'Name: value' strings, not {headers!r}"
        )
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
            raise ConfigError(
                f"cannot read body file {os.fspath(body)!r}: {exc.strerror or exc}"
            ) from None
    raise ConfigError(f"body must be bytes, str or a path, not {type(body).__name__}")


def _as_request(item: Union[Request, Mapping[str, Any]]) -> Request:
    if isinstance(item, Request):
        return item
    if isinstance(item, Mapping):
        unknown = set(item) - {"method", "path", "headers", "body"}
        if unknown:
            raise ConfigError(
                f"unknown request keys {sorted(unknown)} (use method, path, headers, body)"
            )
        return Request(**item)
    raise ConfigError(f"requests_list items must be Request or dict, not {type(item).__name__}")


def _wire(t: Request) -> Any:
    if not isinstance(t.method, str):
        raise ConfigError(f"method must be a string such as GET or POST, not {t.method!r}")
    if t.path is not None and (not isinstance(t.path, str) or not t.path.startswith("/")):
        raise ConfigError(f"request path {t.path!r} must start with '/' (e.g. /echo?x=1)")
    r = _core.RequestTemplate()
    r.method, r.target = t.method.upper(), t.path or ""
    r.headers = normalize_headers(t.headers)
    r.body = read_body(t.body)
    return r
