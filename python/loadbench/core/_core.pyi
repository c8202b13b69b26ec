"""Type stubs for the native extension `loadbench.core._core` (partial: each part adds its own)."""

from typing import Any, Optional

def build_info() -> dict[str, str]: ...
def server_options() -> list[dict[str, Any]]:
    """loadbench-server's options, declared once (cpp/core/server/base/options.hpp)."""

class Server:
    """Boost.Beast HTTP/1.1 + nghttp2 HTTP/2 reference server running in this process on its own threads."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        http: bool = True,
        tls: bool = False,
        tls_port: int = 0,
        cert: Optional[str] = None,
        key: Optional[str] = None,
        tls_resumption: bool = True,
        workers: int = 1,
        max_body: int = 1048576,
        header_timeout_ms: int = 10000,
        idle_timeout_ms: int = 60000,
        accept: str = "reuseport",
        h2: bool = True,
        h2_max_streams: int = 100,
        h2_max_requests: int = 0,
        unix: Optional[str] = None,  # plain HTTP on this unix socket instead of the TCP port
        h3: bool = False,  # HTTP/3 over UDP on the TLS port's number (needs tls)
        h3_0rtt: bool = False,  # HTTP/3: accept 0-RTT early data (needs h3)
    ) -> None:
        """The keywords are server_options()'s, each checked as its flag is (ValueError naming
        the flag); an unknown one is a TypeError."""
    def start(self) -> None: ...
    def stop(self, timeout: float = 10.0) -> bool: ...
    @property
    def running(self) -> bool: ...
    @property
    def http_port(self) -> Optional[int]: ...
    @property
    def https_port(self) -> Optional[int]: ...
    @property
    def workers(self) -> int: ...
    def counters(self) -> dict[str, Any]: ...
    def __enter__(self) -> "Server": ...
    def __exit__(self, *exc: object) -> None: ...

def clock_ticks_per_second() -> float: ...
def http3_available() -> bool: ...
def tls_libraries() -> list[
    str
]: ...  # "openssl" first, then "wolfssl" / "rustls" where the build has them

class Sampler:
    """A process (with its descendants when tree=True) and the machine, read from /proc.
    Raises ValueError (one sentence) for an invalid, nonexistent, foreign or kernel-thread pid."""

    def __init__(
        self,
        pid: int,
        tree: bool = True,
        cgroup: str = "",
        allocation_dir: str = "",
        count_syscalls: bool = True,  # the tree's system calls (perf raw_syscalls:sys_enter)
        syscall_id_file: str = "",  # the tracepoint id's file ("" = tracefs, then debugfs)
    ) -> None: ...
    @property
    def syscalls_na(self) -> str: ...  # why system calls are not counted ("" while they are)
    @property
    def pid(self) -> int: ...
    @property
    def cgroup(self) -> str: ...  # the cgroup whose CPU accounting is the tree's ("" = /proc)
    @property
    def allocation_dir(self) -> str: ...  # the allocation counter's pages ("" = not counted)
    @property
    def tree(self) -> bool: ...
    @property
    def running(self) -> bool: ...
    def snapshot(self) -> dict[str, Any]: ...  # ProcSnapshot fields; "machine" is a dict
    def start(self, interval_s: float) -> None: ...
    def stop(self) -> None: ...
    def series(self) -> dict[str, Any]: ...  # column name -> numpy array
    def exit_time(self) -> Optional[float]: ...
    def sampling_thread_cpu_s(self) -> float: ...
    def proc_listings(self) -> int: ...

def cgroup_cpu_ns(
    dir: str,
) -> Optional[int]: ...  # one reading of a cgroup's CPU usage; None if unreadable
def allocation_totals(dir: str) -> dict[str, Any]: ...  # {calls, frees, bytes, pids} of the pages
def machine_processes() -> list[
    tuple[int, int, int, float, str, bool]
]: ...  # (pid, ppid, start_ticks, cpu_s, comm, kernel_thread)

class OpenResult:
    connected: int
    failed: int
    timed_out: bool
    first_error: str

class RequestResult:
    ok: int  # a 2xx response, connection still usable
    non_2xx: int
    failed: int  # closed, reset, malformed or no answer in time
    first_error: str

class ConnectionHolder:
    """N idle keep-alive connections at an fd and a state byte each (loadbench.hold_connections)."""

    bytes_per_slot: int
    def __init__(
        self,
        address: str,
        port: int,
        connections: int,
        request: bytes | str,
        head_request: bool = False,
        connects_in_flight: int = 256,
    ) -> None: ...
    def open(self, timeout_s: float) -> OpenResult: ...
    def held(self) -> int: ...
    def request_all(self, timeout_s: float) -> RequestResult: ...
    def close(self) -> None: ...

def __getattr__(name: str) -> Any: ...  # the other parts' bindings

class RequestTemplate:
    method: str
    target: str  # empty: the URL's path + query
    headers: list[tuple[str, str]]
    body: bytes
    def __init__(self) -> None: ...

class EngineConfig:
    """A run's configuration, field by field (LOADBENCH_ENGINE_OPTIONS in
    core/generator/base/config.hpp; tests/test_core_stub.py holds this list to it)."""

    url: str
    unix_socket: str
    requests: list[RequestTemplate]
    connections: int
    threads: int
    duration_s: float
    total_requests: int
    warmup_s: float
    timeout_s: float
    keepalive: bool
    tls_verify: bool
    tls_cacert: str
    tls_session_resumption: bool
    quic_early_data: bool
    tls_library: str
    ack_with_request: bool
    rst_close: bool
    cpus: list[int]
    interval_s: float
    connect_retry_delay_s: float
    rate: float
    rate_schedule: list[tuple[float, float]]
    connections_schedule: list[tuple[float, float]]
    poisson: bool
    seed: int
    max_connections: int
    send_batch_s: float
    busy_poll: bool
    batch_reads: bool
    h2: bool
    h3: bool
    streams: int
    h2_window_bits: int
    pipeline: int
    def __init__(self) -> None: ...

# (name, default, help) of every EngineConfig field, in declaration order (LOADBENCH_ENGINE_OPTIONS)
ENGINE_OPTIONS: tuple[tuple[str, Any, str], ...]

class HdrHistogram:
    counts: Any  # numpy int64 array
    lowest: int
    highest: int
    significant_figures: int
    min: int
    max: int

# The engine's plain counters, in order (LOADBENCH_COUNTERS in core/generator/base/config.hpp); each is
# an int attribute of Measurements.
COUNTERS: tuple[str, ...]
# (name, doc) of every phase a request's or a new connection's time is split into, in order
# (LOADBENCH_PHASES in core/generator/base/config.hpp): Measurements.phases_us holds one histogram each.
PHASES: tuple[tuple[str, str], ...]

class Measurements:
    latency_us: HdrHistogram
    latency_uncorrected_us: HdrHistogram
    lateness_us: HdrHistogram
    loop_lateness_us: HdrHistogram
    phases_us: dict[str, HdrHistogram]  # every name of PHASES
    first_error: str
    status_codes: dict[int, int]
    errors: dict[str, int]
    streams_reset: dict[str, int]  # HTTP/2 RST_STREAM error code name -> count
    due_gaps: list[int]  # open loop, the schedule audit: gap_bucket counts of due-time gaps
    send_gaps: list[int]  # and of send gaps (core/schedule_audit.py)
    udp_receive_buffer: int  # HTTP/3: smallest SO_RCVBUF granted a connection (0: no UDP socket)
    udp_send_buffer: int
    udp_gro: bool  # HTTP/3: UDP GRO was on (LOADBENCH_UDP_GRO=0 turns it off)
    def __getattr__(self, counter: str) -> int: ...  # every name of COUNTERS

class RunResult:
    totals: Measurements
    interval_s: float
    duration_s: float
    warmup_s: float
    cpu_s: float
    threads: int
    interrupted: bool
    open_loop: bool
    target_rate: float
    max_connections: int
    pool_size: int  # open loop: connections the pool held at the end (its first ones + growth)
    preconnected: int
    udp_drops_measured: bool  # HTTP/3: /proc/net/snmp read at the window's start and end
    udp_in_errors: int  # machine-wide UDP receive drops meanwhile (v4 + v6)
    udp_rcvbuf_errors: int
    timeline: dict[str, Any]  # numpy columns + each interval's sparse histogram

class Progress:
    elapsed_s: float
    warming_up: bool
    finished: bool
    responses: int
    errors: int
    completed: int  # every response so far, warm-up and drain included

class Engine:
    """The native load engine (use loadbench.run instead). Raises ValueError("config: ...") for a
    configuration it refuses."""

    def __init__(self, config: EngineConfig) -> None: ...
    def preconnect(self, timeout_s: float) -> int: ...
    def start(self) -> None: ...
    def wait(self, seconds: float) -> bool: ...
    def stop(self) -> None: ...
    def progress(self) -> Progress: ...
    def result(self) -> RunResult: ...
