"""What a sweep runs: its settings (validated once, here), its workloads, and the plan - every
cell in execution order and the time it should take. Nothing here measures; runner.py does.
"""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import asdict, dataclass, field, replace
from typing import Optional, Union

from ..core import analysis, protocols
from ..core.allocation_sites import heaptrack_missing
from ..core.allocations import library_path
from ..core.errors import ConfigError
from ..core.options import PASSED_THROUGH, RunOptions, field_type
from ..core.profile import perf_missing
from ..core.run import check_tls_library
from ..core.schedule import parse_duration
from ..slo.objectives import Objective, parse_objectives
from .targets import Target, default_cpu_split

TRANSPORTS = ("tcp", "unix")
DEFAULT_H2_STREAMS = 10  # concurrent streams per HTTP/2 connection (seed report 001: 10)
TECHEMPOWER_PIPELINE = 16  # TechEmpower's plaintext test: wrk with 16 pipelined requests

ECHO_BODY_BYTES = 4096

# the name of a target listed twice (SweepPlan.twins): "beast" and "beast-again"
TWIN_SUFFIX = "-again"

# Measured per-step costs of a sweep (see Sweep.planned_seconds): 330 repeats of the 2026-11-30
# default sweep took warm-up + window + 0.009 s (median), 30 server starts 4.1 s in all.
REPEAT_OVERHEAD_S = 0.01
SERVER_START_S = 0.15
GATE_PROBE_S = 1.0
# A hold cell (memory per idle connection) on this machine with the Beast server (2026-11-30):
# 0.22 s for 200 connections, 0.38 s for 2 000, 0.93 s for 10 000 - the 0.2 s settle before
# measuring, then about 70 us per connection to open, accept, measure and answer.
HOLD_FIXED_S = 0.25
HOLD_PER_CONNECTION_S = 75e-6
# A capacity cell's search: from half the closed-loop peak one passing step, one failing at the
# peak, bisections down to capacity_precision of a bracket half the peak wide, and the
# confirmations (loadbench.slo.search). The planned count; a server whose capacity is far from
# its closed-loop peak takes a few more.
CAPACITY_BRACKET_STEPS = 2
# Settling a fresh server (core/steady.py): at least six closed-loop rounds of 0.25 s (two
# medians of three) and their overhead - the planned cost per server start when the sweep
# settles (a JIT target's own warm-up adds to it)
SETTLE_S = 1.7


@dataclass
class Workload:
    """What each request is: one template (method, path, headers, body) or a round-robin list.

    ``concurrencies`` overrides the sweep's list for this workload (e.g. json at c=50 only),
    ``pipeline`` the sweep's HTTP/1.1 pipeline depth (requests in flight per connection).
    """

    name: str
    method: str = "GET"
    path: str = "/"
    headers: dict = field(default_factory=dict)
    body: Optional[str] = None
    requests: Optional[list] = None
    concurrencies: Optional[list] = None
    pipeline: Optional[int] = None

    def __post_init__(self) -> None:
        if not self.name or any(c in self.name for c in "|/\n"):
            raise ConfigError(
                f"workload name {self.name!r} must be non-empty without '|', '/' or newlines"
            )
        if self.requests is not None:
            if not self.requests:
                raise ConfigError(f"workload {self.name!r}: requests must not be empty")
            for i, req in enumerate(self.requests):
                if not isinstance(req, dict) or not str(req.get("path", "/")).startswith("/"):
                    raise ConfigError(
                        f"workload {self.name!r}: requests[{i}] needs a path starting with '/'"
                    )
        if not self.path.startswith("/"):
            raise ConfigError(
                f"workload {self.name!r}: path must start with '/', not {self.path!r}"
            )
        if self.pipeline is not None:
            _check_pipeline(f"workload {self.name!r}: pipeline", self.pipeline)


def _check_pipeline(key: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{key}: {value!r} is not a positive integer (1: no pipelining)")


def builtin_workloads() -> dict[str, Workload]:
    """plaintext GET, json GET and echo POST with a 4 KiB body - the routes every peer serves -
    and plaintext-pipelined, TechEmpower's plaintext test (16 pipelined requests per HTTP/1.1
    connection), which a sweep runs only when it names it."""
    return {
        "plaintext": Workload("plaintext", "GET", "/plaintext"),
        "plaintext-pipelined": Workload(
            "plaintext-pipelined", "GET", "/plaintext", pipeline=TECHEMPOWER_PIPELINE
        ),
        "json": Workload("json", "GET", "/json"),
        "echo": Workload(
            "echo",
            "POST",
            "/echo",
            {"Content-Type": "application/octet-stream"},
            body="x" * ECHO_BODY_BYTES,
        ),
    }


@dataclass(frozen=True)
class Cell:
    target: str
    protocol: str
    workload: str
    # "closed" (keep-alive, closed loop), "connect" (a new connection per request), "open"
    # (open loop at a fixed rate), "hold" (N idle keep-alive connections held: memory per
    # connection, no load) or "capacity" (the highest open-loop rate meeting the objectives)
    mode: str
    # connections (closed, connect, hold), or for "open" the rate as a percent of the target's
    # closed-loop capacity measured earlier in the same sweep (the record's `load_pct`)
    load: int
    repeat: int

    @property
    def id(self) -> str:
        load = {
            "closed": "c",
            "connect": "connect",
            "open": "open",
            "hold": "hold",
            "capacity": "capacity",
        }[self.mode] + str(self.load)
        return f"{self.target}|{self.protocol}|{self.workload}|{load}|r{self.repeat}"

    def label(self) -> str:
        load = {
            "closed": f"c={self.load}",
            "connect": f"new-conn c={self.load}",
            "open": f"open loop {self.load}% of capacity",
            "hold": f"{self.load} idle connections held",
            "capacity": f"capacity search c={self.load}",
        }[self.mode]
        return f"{self.target} {self.protocol} {self.workload} {load} #{self.repeat + 1}"


# The passed-through run options a sweep sets per cell (threads from generator_threads and the
# CPUs, keepalive by the cell's mode) or by a key of its own: not for its [run] table.
RUN_OWNED = {
    "threads",
    "warmup",
    "timeout",
    "interval",
    "keepalive",
    "streams",
    "pipeline",
    "tls_library",
    "ack_with_request",
    "rst_close",
}


def _run_value(name: str, value: object) -> object:
    """A [run] table value as RunOptions takes it, checked against the option's declared type."""
    kind = field_type(name)
    if kind == "seconds" and isinstance(value, str):
        return parse_duration(value, f"run.{name}")
    ok = {
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "seconds": isinstance(value, (int, float)) and not isinstance(value, bool),
        "string": isinstance(value, str),
    }.get(kind, True)
    if not ok:
        raise ConfigError(f"run.{name}: expected {kind}, not {value!r}")
    return value


@dataclass
class SweepPlan:
    """The matrix to run: settings, validated on construction, and the cells they make. Every
    field has a default; see bench/sweeps/example.toml for the TOML form. loadbench.Sweep adds
    ``run()``."""

    targets: list = field(default_factory=lambda: [Target("beast")])
    workloads: list = field(default_factory=lambda: [builtin_workloads()["plaintext"]])
    concurrencies: list = field(default_factory=lambda: [1, 10, 50])
    protocols: list = field(default_factory=lambda: ["http"])
    # Concurrent streams per connection: an int for every HTTP/2 protocol, or {protocol: n}.
    # HTTP/1.1 has one request in flight per connection (1); HTTP/2 defaults to 10.
    streams: Union[int, dict, None] = None
    # HTTP/1.1 pipelining: requests written back to back per keep-alive connection, for every
    # workload that sets no `pipeline` of its own (1: none). HTTP/2 cells use streams instead,
    # connection-setup cells carry one request per connection.
    pipeline: int = 1
    # The protocols that get the connection-setup and open-loop cells (None: all of them).
    detail_protocols: Optional[list] = None
    # Zuri's mode: a closed-loop or connection-setup cell ends after exactly this many responses
    # + errors instead of after `duration` (open-loop cells keep `duration`: a rate needs a time).
    requests: Optional[int] = None
    connection_setup: bool = False
    connection_setup_concurrency: int = 20
    connection_setup_workload: str = "plaintext"
    # Open loop (coordinated-omission corrected latency) at these fractions of each target's
    # best closed-loop req/s for open_loop_workload, measured earlier in the same sweep.
    open_fractions: list = field(default_factory=list)
    open_loop_workload: str = "plaintext"
    # Capacity under these objectives (e.g. ["p99<10ms"]; empty: none): per target and detail
    # protocol, capacity_repeats searches (loadbench.capacity) over open_loop_workload at the
    # largest concurrency, from half the closed-loop peak measured earlier in the sweep; steps
    # of `duration` after `warmup`, bisected to capacity_precision, confirmed once for
    # capacity_hold seconds (at least `duration`): a 1 s step that passes says little about
    # the next 5 s - half of one sweep's 1 s capacities broke p99<10ms within 5 s, under wrk2
    # as under loadbench (reports/capacity-vs-wrk2.md).
    capacity: list = field(default_factory=list)
    capacity_precision: float = 0.05
    capacity_hold: float = 5.0
    capacity_repeats: int = 1
    # The judged seconds of each capacity step (None: `duration`): the capacity's judging rule
    # (every 1 s window must pass) needs steps of at least a window, whatever the cells' windows.
    capacity_step: Optional[float] = None
    # Memory per idle connection: for each target, `repeats` cells that hold this many idle
    # keep-alive connections (loadbench.hold_connections) on a freshly started server and
    # measure its RSS/PSS growth per connection (0: none). Plain http only (the holder speaks
    # cleartext HTTP/1.1); the request is connection_setup_workload's GET.
    hold_connections: int = 0
    # Steady state before judging: after each server start, closed-loop rounds of the first
    # cell's load until req/s stops climbing (and at least the target's own `warmup`), so no
    # cell measures a cold server and a capacity search starts from the steady throughput
    # (core/steady.py; recorded per cell as `settling`).
    settle: bool = True
    repeats: int = 1
    # A repeat is an independent replication: True runs the sweep in blocks (every server's
    # repeat 1, then every server's repeat 2, ...), each (target, protocol) of a block on a
    # freshly started server, the order within a block shuffled from order_seed (recorded in
    # sweep.json). False: a server's repeats back to back on one process (the old way; their
    # range then measures seconds of one burst, not the server - reports/variance-split.md).
    blocks: bool = True
    order_seed: int = 1
    # An A/A check built in: each target named here is listed a second time as "<name>-again",
    # the same server in every respect, measured as a separate target; the report's noise check
    # reads every such pair (report/aa_check.py), and they must read ≈ in every protocol.
    twins: list = field(default_factory=list)
    duration: float = 2.0
    warmup: float = 0.5
    timeout: float = 5.0
    # The timeline interval of every cell (loadbench.run's interval): finer than the window, so
    # report.html can draw req/s and p99 over the window (a 1 s window at the default 1 s
    # interval has one point, and no timeline is drawn).
    interval: float = 1.0
    workers: Optional[int] = None
    server_cpus: Optional[list] = None
    generator_cpus: Optional[list] = None
    generator_threads: Optional[int] = None
    peers_dir: Optional[str] = None
    baseline: Optional[str] = None  # the target the report's ratios divide by (default: the first)
    # A cell whose window saw other processes use more than this share of the machine's CPU is
    # re-run up to contended_reruns times, then recorded as contended (marked, not ranked).
    contended_share: float = analysis.CONTENDED_SHARE
    contended_reruns: int = 2
    # Distributed generation: every cell's load comes from `shards` Dask workers of this
    # scheduler (an address, or "local" for worker processes on this machine).
    cluster: Optional[str] = None
    shards: Optional[int] = None
    # The generator's TLS library for https and h2 cells (loadbench.run's tls_library): a cheaper
    # client handshake ("rustls") keeps connection-setup cells measuring the server, not us.
    tls_library: str = "openssl"
    # Opt-in TCP exchanges for the connection-setup cells (loadbench.run's ack_with_request and
    # rst_close): fewer packets per new connection, stated in the report's settings.
    ack_with_request: bool = False
    rst_close: bool = False
    # How the generator reaches the server: "tcp" (loopback), or "unix" - the embedded server on
    # a unix socket, the same request path without TCP's loopback cost (a lower-noise "server
    # only" figure, never to be compared with a tcp one: the report's settings name it).
    transport: str = "tcp"
    # Count every started server's heap allocations (loadbench.core.allocations: LD_PRELOAD of
    # the counter): allocs/req and bytes/req rows in the report. Off by default - the counter
    # costs the server a little CPU (bench/allocation_counter_cost.py), which must not skew
    # the other figures of a sweep that did not ask for it.
    allocations: bool = False
    # After the measured cells, one short window per server with heaptrack attached: its top
    # allocation sites per response (allocation_sites.json, the report). Slow, never timed.
    allocation_sites: bool = False
    # After each closed-loop and connection-setup cell's repeats, one more window of it with perf
    # on the server's tree: its CPU profile (profiles.json, profiles/<cell>/, the report's "Where
    # the CPU goes"). perf slows the server, so that window's speed is never reported.
    profile: bool = False
    # Any other option loadbench.run passes to the engine unchanged (core/options.py's
    # engine_option: send_batch, seed, tls_session_resumption, ...) for every cell: the sweep
    # file's [run] table (run_options here: run() is the sweep's own method). An option the
    # sweep sets per cell or by a key of its own (RUN_OWNED) is refused there, so one setting
    # never has two places.
    run_options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workloads = [
            builtin_workloads()[w] if isinstance(w, str) and w in builtin_workloads() else w
            for w in self.workloads
        ]
        for w in self.workloads:
            if not isinstance(w, Workload):
                raise ConfigError(
                    f"unknown workload {w!r}: use {', '.join(builtin_workloads())} or a Workload"
                )
        self.add_twins()
        names = [t.name for t in self.targets]
        if not names:
            raise ConfigError("a sweep needs at least one target")
        if len(set(names)) != len(names):
            raise ConfigError(f"target names must be unique: {names}")
        for t in self.targets:
            if t.variant_of is not None and (t.variant_of not in names or t.variant_of == t.name):
                raise ConfigError(
                    f"target {t.name!r}: variant_of {t.variant_of!r} is not another target of this sweep"
                )
        if self.baseline is not None and self.baseline not in names:
            raise ConfigError(
                f"baseline {self.baseline!r} is not one of the targets ({', '.join(names)})"
            )
        wnames = [w.name for w in self.workloads]
        if len(set(wnames)) != len(wnames):
            raise ConfigError(f"workload names must be unique: {wnames}")
        for p in self.protocols:
            if p not in protocols.NAMES:
                raise ConfigError(f"protocols: {p!r} is not one of {', '.join(protocols.NAMES)}")
        if not self.protocols:
            raise ConfigError(f"protocols must name at least one of {', '.join(protocols.NAMES)}")
        if len(set(self.protocols)) != len(self.protocols):
            raise ConfigError(f"protocols must be unique: {self.protocols}")
        for p in self.detail_protocols or []:
            if p not in protocols.NAMES:
                raise ConfigError(
                    f"detail_protocols: {p!r} is not one of {', '.join(protocols.NAMES)}"
                )
        self._check_streams()
        _check_pipeline("pipeline", self.pipeline)
        if self.allocations:
            library_path()  # one clear error now, not a server that fails to start later
        if self.allocation_sites and (missing := heaptrack_missing()):
            raise ConfigError(missing)
        if self.profile and (missing := perf_missing()):
            raise ConfigError(missing.replace("--profile", "profile = true"))
        if self.requests is not None and (
            isinstance(self.requests, bool)
            or not isinstance(self.requests, int)
            or self.requests < 1
        ):
            raise ConfigError(f"requests: {self.requests!r} is not a positive integer")
        for c in list(self.concurrencies) + [
            c for w in self.workloads for c in (w.concurrencies or [])
        ]:
            if not isinstance(c, int) or c < 1:
                raise ConfigError(f"concurrencies: {c!r} is not a positive integer")
        checks = {
            "repeats": self.repeats >= 1,
            "duration": self.duration > 0,
            "capacity_step": self.capacity_step is None or self.capacity_step > 0,
            "warmup": self.warmup >= 0,
            "timeout": self.timeout > 0,
            "interval": self.interval > 0,
            "connection_setup_concurrency": self.connection_setup_concurrency >= 1,
            "workers": self.workers is None or self.workers >= 1,
            "generator_threads": self.generator_threads is None or self.generator_threads >= 1,
            "contended_share": 0 < self.contended_share <= 1,
            "contended_reruns": self.contended_reruns >= 0,
            "shards": self.shards is None or self.shards >= 1,
        }
        if self.shards is not None and self.cluster is None:
            raise ConfigError("shards needs cluster (a Dask scheduler address, or 'local')")
        for key, ok in checks.items():
            if not ok:
                raise ConfigError(f"{key}: {getattr(self, key)!r} is out of range")
        for f in self.open_fractions:
            if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 2:
                raise ConfigError(f"open_fractions: {f!r} is not a fraction of capacity in (0, 2]")
        if self.open_fractions and self.open_loop_workload not in wnames:
            raise ConfigError(
                f"open_loop_workload {self.open_loop_workload!r} is not a workload of this sweep"
            )
        self._check_capacity(wnames)
        if self.connection_setup and self.connection_setup_workload not in wnames:
            raise ConfigError(
                f"connection_setup_workload {self.connection_setup_workload!r} is not a workload of this sweep"
            )
        self._check_hold()
        self._check_run()
        self._check_transport()
        self.check_tls_library()
        available = sorted(os.sched_getaffinity(0))
        for key in ("server_cpus", "generator_cpus"):
            for cpu in getattr(self, key) or []:
                if cpu not in available:
                    raise ConfigError(
                        f"{key}: CPU {cpu} is not available here (allowed: {available})"
                    )
        split = default_cpu_split(available)
        self.server_cpus = list(self.server_cpus or split[0])
        self.generator_cpus = list(self.generator_cpus or split[1])
        if self.workers is None:
            self.workers = len(self.server_cpus)

    def add_twins(self) -> None:
        """Each name in ``twins``: the same target again, named "<name>-again" (twin_of)."""
        by_name = {t.name: t for t in self.targets}
        for name in self.twins:
            if name not in by_name:
                raise ConfigError(
                    f"twins: {name!r} is not one of the targets ({', '.join(by_name)})"
                )
            twin = f"{name}{TWIN_SUFFIX}"
            if twin not in by_name:  # a resumed or re-made plan has it already
                self.targets.append(replace(by_name[name], name=twin, twin_of=name))

    def _check_streams(self) -> None:
        value = self.streams
        if value is None:
            return
        items = (
            value.items()
            if isinstance(value, dict)
            else [(p, value) for p in protocols.MULTIPLEXED]
        )
        if not isinstance(value, (int, dict)) or isinstance(value, bool):
            raise ConfigError(
                f"streams: {value!r} is not a positive integer or a table of protocol = integer"
            )
        for p, n in items:
            if p not in protocols.NAMES:
                raise ConfigError(f"streams.{p}: not one of {', '.join(protocols.NAMES)}")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ConfigError(f"streams.{p}: {n!r} is not a positive integer")
            if p not in protocols.MULTIPLEXED and n != 1:
                raise ConfigError(
                    f"streams.{p}: HTTP/1.1 has no streams (its requests in flight per "
                    f"connection are the pipeline key), so it must be 1, not {n}"
                )

    def capacity_objectives(self) -> list[Objective]:
        """The capacity objectives, parsed (checked when the plan was): what the searches and the
        open-loop cells are judged by."""
        return parse_objectives(list(self.capacity)) if self.capacity else []

    def capacity_latency_limit_s(self) -> Optional[float]:
        """The loosest latency objective, in seconds (None without): what sizes a pool."""
        limits = [o.limit for o in self.capacity_objectives() if o.is_latency]
        return max(limits) / 1e6 if limits else None

    def _check_capacity(self, workloads: list[str]) -> None:
        if not self.capacity:
            return
        if isinstance(self.capacity, str):
            self.capacity = [self.capacity]
        parse_objectives(self.capacity)  # a bad objective stops the sweep before it starts
        if not 0 < self.capacity_precision < 1:
            raise ConfigError(
                f"capacity_precision: {self.capacity_precision!r} is not a fraction in (0, 1)"
            )
        if not self.capacity_hold > 0:
            raise ConfigError(f"capacity_hold: {self.capacity_hold!r} is not a duration > 0")
        if isinstance(self.capacity_repeats, bool) or not (
            isinstance(self.capacity_repeats, int) and self.capacity_repeats >= 1
        ):
            raise ConfigError(f"capacity_repeats: {self.capacity_repeats!r} is not an integer >= 1")
        if self.open_loop_workload not in workloads:
            raise ConfigError(
                f"open_loop_workload {self.open_loop_workload!r} (the capacity cells' workload) "
                "is not a workload of this sweep"
            )

    def capacity_steps(self) -> int:
        """The planned steps of one capacity search (CAPACITY_BRACKET_STEPS, the bisections of a
        bracket half the peak wide down to capacity_precision, one confirmation)."""
        return CAPACITY_BRACKET_STEPS + math.ceil(math.log2(0.5 / self.capacity_precision)) + 1

    def capacity_step_seconds(self) -> float:
        """How long each step of a capacity search is judged: capacity_step, else duration."""
        return self.capacity_step if self.capacity_step is not None else self.duration

    def capacity_hold_seconds(self) -> float:
        """How long a capacity search's confirmation is judged: capacity_hold, and never less
        than the steps it confirms."""
        return max(self.capacity_hold, self.capacity_step_seconds())

    def _check_run(self) -> None:
        """The [run] table: passed-through engine options the sweep does not set itself, each
        of its declared type; then RunOptions' own checks on them."""
        if not isinstance(self.run_options, dict):
            raise ConfigError(
                f"run: expected a table of loadbench.run options, not {self.run_options!r}"
            )
        allowed = sorted(set(PASSED_THROUGH) - RUN_OWNED)
        for name, value in list(self.run_options.items()):
            if name not in allowed:
                owned = f"the sweep sets {name} itself" if name in RUN_OWNED else "unknown option"
                raise ConfigError(
                    f"run.{name}: {owned} (the [run] table takes {', '.join(allowed)})"
                )
            self.run_options[name] = _run_value(name, value)
        try:
            RunOptions(**self.run_options)
        except ConfigError as exc:
            raise ConfigError(f"run: {exc}") from None

    def _check_hold(self) -> None:
        n = self.hold_connections
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigError(
                f"hold_connections: {n!r} is not a number of connections (an integer >= 1, or 0 for none)"
            )
        if not n:
            return
        w = self.hold_workload()
        # the holder sends one fixed GET on each connection (no body, no request list)
        if w.requests is not None or w.method != "GET" or w.body:
            raise ConfigError(
                f"hold_connections: the held connections each send one GET of connection_setup_workload, "
                f"and {w.name!r} is not a plain GET; set connection_setup_workload to one "
                "(e.g. plaintext)"
            )

    def _check_transport(self) -> None:
        """transport = "unix" is what loadbench-server --unix serves: plain HTTP/1.1 and h2c.
        Anything a unix socket cannot carry here is refused, never silently measured over TCP."""
        if self.transport not in TRANSPORTS:
            raise ConfigError(
                f"transport: {self.transport!r} is not one of {', '.join(TRANSPORTS)}"
            )
        if self.transport == "tcp":
            return
        others = [t.name for t in self.targets if t.kind != "beast"]
        if others:
            raise ConfigError(
                f"transport 'unix' is for the embedded server (kind 'beast') only: {', '.join(others)} "
                "would be started or reached on a TCP port; measure them in a tcp sweep"
            )
        tls = [p for p in self.protocols if p in protocols.TLS]
        if tls:
            raise ConfigError(
                f"transport 'unix' carries http and h2c only (loadbench-server --unix serves plain "
                f"HTTP; its TLS listener is TCP): drop {', '.join(tls)} from protocols"
            )
        asked = [k for k in ("ack_with_request", "rst_close") if getattr(self, k)]
        if self.hold_connections:
            asked.append("hold_connections (the connection holder speaks TCP)")
        if asked:
            raise ConfigError(f"transport 'unix' has no TCP exchanges: {', '.join(asked)}")

    def hold_workload(self) -> Workload:
        """The request of the hold cells: connection_setup_workload's (one of this sweep's
        workloads, or a built-in of that name even when the sweep does not sweep it)."""
        name = self.connection_setup_workload
        found = {w.name: w for w in self.workloads}.get(name) or builtin_workloads().get(name)
        if found is None:
            raise ConfigError(
                f"connection_setup_workload {name!r} (the hold cells' request) is neither a workload "
                f"of this sweep nor a built-in ({', '.join(builtin_workloads())})"
            )
        return found

    def hold_cell_seconds(self) -> float:
        """The planned wall time of one hold cell: its own server start (each hold cell gets a
        fresh server) plus the measured cost of holding ``hold_connections``."""
        return SERVER_START_S + HOLD_FIXED_S + HOLD_PER_CONNECTION_S * self.hold_connections

    def streams_for(self, protocol: str) -> int:
        """Concurrent streams per connection for ``protocol`` (1 for HTTP/1.1)."""
        if protocol not in protocols.MULTIPLEXED:
            return 1
        if isinstance(self.streams, dict):
            return int(self.streams.get(protocol, DEFAULT_H2_STREAMS))
        return int(self.streams) if self.streams is not None else DEFAULT_H2_STREAMS

    def pipeline_for(self, cell: Cell) -> int:
        """HTTP/1.1 requests in flight per connection for ``cell`` (1: no pipelining): its
        workload's pipeline, else the sweep's - for keep-alive HTTP/1.1 cells only."""
        if cell.protocol in protocols.MULTIPLEXED or cell.mode not in ("closed", "open"):
            return 1
        w = next(w for w in self.workloads if w.name == cell.workload)
        return w.pipeline if w.pipeline is not None else self.pipeline

    def cell_seconds(self) -> float:
        """The planned wall time of one duration-based cell (the progress bar's first estimate)."""
        return self.warmup + self.duration + 0.3

    def planned_seconds(self, cells: Optional[list] = None) -> float:
        """The planned wall time of ``cells`` (default: all) on a quiet machine, re-runs of
        contended windows not included. From the timestamps of the 2026-11-30 default sweep (2
        cores, 13.3 min): a repeat took warm-up + window + REPEAT_OVERHEAD_S (drain, sampler
        edges, record); each server process - a (block, target, protocol), group_key - adds a
        start and its settling; the load gate probes once before the first cell (GATE_PROBE_S:
        the sweep's own load keeps the 1-min load average above the gate's threshold, so the
        probe samples other processes' CPU for 1 s) and later cells, the next server's first
        included, take the previous window's quiet figure instead (LoadGate.vouch). A hold cell
        takes hold_cell_seconds() instead (no window, no gate)."""
        cells = self.cells() if cells is None else cells
        loaded = [c for c in cells if c.mode != "hold"]
        groups = {self.group_key(c) for c in loaded}
        # the gate probes before the first cell; later groups take the window before (vouch)
        probe = GATE_PROBE_S if groups else 0.0
        return (
            probe
            + sum(self.planned_cell_seconds(c) for c in cells)
            + sum(SERVER_START_S + self.settle_seconds(target) for _, target, _ in groups)
        )

    def group_key(self, cell: Cell) -> tuple:
        """(block, target, protocol): the cells that share one server process. With blocks a
        repeat is its own block, so each repeat of a server is a fresh process."""
        return (cell.repeat if self.blocks else 0, cell.target, cell.protocol)

    def server_groups(self, cells: list[Cell]) -> list[tuple[tuple, list[Cell]]]:
        """``cells`` as (group_key, cells) in the order they run: block by block, the groups of
        a block shuffled by a generator seeded from (order_seed, block) - so drift over the
        sweep hits every server alike and the order is the same on a resume - each group's
        cells in plan order (an open-loop cell after the closed-loop cells it is sized from)."""
        groups: dict[tuple, list[Cell]] = {}
        for cell in cells:
            groups.setdefault(self.group_key(cell), []).append(cell)
        out: list[tuple[tuple, list[Cell]]] = []
        for block in sorted({key[0] for key in groups}):
            keys = [key for key in groups if key[0] == block]
            if self.blocks:
                random.Random(f"{self.order_seed}:{block}").shuffle(keys)
            out += [(key, groups[key]) for key in keys]
        return out

    def run_order(self, cells: Optional[list[Cell]] = None) -> list[Cell]:
        """``cells`` (default: all) in the order a run measures them (server_groups)."""
        cells = self.cells() if cells is None else cells
        return [c for _, group in self.server_groups(cells) for c in group]

    def settle_seconds(self, target: str) -> float:
        """The planned settling of one fresh server of ``target``: SETTLE_S, or its registry
        warm-up when longer (0 when the sweep does not settle)."""
        if not self.settle:
            return 0.0
        warmup = next((t.warmup for t in self.targets if t.name == target), 0.0)
        # at least six rounds, and at least the warm-up (the rounds' overhead beside it)
        return max(SETTLE_S, warmup + SETTLE_S - 1.5)

    def planned_cell_seconds(self, cell: Cell) -> float:
        """One cell's share of planned_seconds() without the per-server costs (the progress
        bar's weight for it)."""
        if cell.mode == "hold":
            return self.hold_cell_seconds()
        repeat = self.warmup + self.duration + REPEAT_OVERHEAD_S
        if cell.mode == "capacity":  # each search on a fresh server, settled
            fresh = SERVER_START_S + self.settle_seconds(cell.target)
            step = self.warmup + self.capacity_step_seconds() + REPEAT_OVERHEAD_S
            hold = self.warmup + self.capacity_hold_seconds() + REPEAT_OVERHEAD_S
            return fresh + step * (self.capacity_steps() - 1) + hold
        return repeat

    # -- the matrix ----------------------------------------------------------------------
    def cells(self) -> list[Cell]:
        """Every cell in execution order: target, protocol, workload, load, repeat."""
        out = []
        for target in self.targets:
            for protocol in self.protocols:
                for w in self.workloads:
                    for c in w.concurrencies or self.concurrencies:
                        out += [
                            Cell(target.name, protocol, w.name, "closed", c, r)
                            for r in range(self.repeats)
                        ]
                    detail = self.detail_protocols is None or protocol in self.detail_protocols
                    if (
                        self.connection_setup
                        and detail
                        and w.name == self.connection_setup_workload
                    ):
                        out += [
                            Cell(
                                target.name,
                                protocol,
                                w.name,
                                "connect",
                                self.connection_setup_concurrency,
                                r,
                            )
                            for r in range(self.repeats)
                        ]
                    if detail and w.name == self.open_loop_workload:
                        out += [
                            Cell(target.name, protocol, w.name, "open", round(100 * f), r)
                            for f in self.open_fractions
                            for r in range(self.repeats)
                        ]
                        if self.capacity:
                            c = max(w.concurrencies or self.concurrencies)
                            out += [
                                Cell(target.name, protocol, w.name, "capacity", c, r)
                                for r in range(self.capacity_repeats)
                            ]
                if protocol == "http":
                    out += self._hold_cells(target)
            if "http" not in self.protocols:  # hold cells are http whatever the load protocols are
                out += self._hold_cells(target)
        return out

    def _hold_cells(self, target: Target) -> list[Cell]:
        if not self.hold_connections:
            return []
        name = self.hold_workload().name
        return [
            Cell(target.name, "http", name, "hold", self.hold_connections, r)
            for r in range(self.repeats)
        ]

    def check_tls_library(self) -> None:
        # The build matters only where a cell makes TLS handshakes.
        check_tls_library(
            self.tls_library, built=any(p in protocols.TLS_OVER_TCP for p in self.protocols)
        )

    def settings(self) -> dict:
        """What was asked for, as plain data (sweep.json; the report's settings table)."""
        data = asdict(self)
        data["targets"] = [asdict(t) for t in self.targets]
        data["workloads"] = [asdict(w) for w in self.workloads]
        for w in data["workloads"]:
            if w["body"] is not None and len(w["body"]) > 64:
                w["body"] = {"bytes": len(w["body"])}
        return json.loads(json.dumps(data, default=str))
