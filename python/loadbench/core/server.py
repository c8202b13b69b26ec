"""The native Beast reference server (`loadbench-server`) as a child process.

Measurement needs the server in its own process, so that /proc shows its CPU time
and RSS alone. The binary prints one JSON line once it listens, e.g.

    {"event": "ready", "pid": 123, "host": "127.0.0.1", "http_port": 40211, "https_port": null, "workers": 1}

(with ``--unix PATH`` also ``"unix": PATH``, and ``http_port`` null: the plain listener is the
unix socket), and, after a graceful stop (SIGINT/SIGTERM), one line with its counters:

    {"event": "stopped", "connections_accepted": 10, ..., "requests": {"plaintext": 5, ...},
     "h1": {"connections": 4, "requests": 3},
     "h2": {"connections": 6, "streams": 2, "requests": 2, "streams_refused": 0, "goaways": 0},
     "h3": {"connections": 4, "handshakes": 4, "resumed": 3, "zero_rtt": 3, "requests": 4,
            "goaways": 0}}
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from .allocations import AllocationCounter
from .cgroup import ServerCgroup
from .errors import ConfigError, ServerError
from .paths import server_binary
from .process import die_with_parent


def server_options() -> list[dict[str, Any]]:
    """The binary's options as it declares them once (cpp/core/server/base/options.hpp): flag,
    keyword (a ServerProcess field, a `loadbench serve` flag's dest), kind (text, path, integer,
    accept, on, off), min, max, metavar, help and default. ServerProcess's argv and `loadbench
    serve`'s flags come from it; the binary checks every value (range and message) itself."""
    from . import _core

    return list(_core.server_options())


def option_args(option: dict[str, Any], value: Any) -> list[str]:
    """The flags that give ``option`` this value: none for None or the default; a switch
    alone (``on`` when true, ``off`` - e.g. --no-http - when false)."""
    kind = option["kind"]
    if value is None:
        return []
    if kind in ("on", "off"):
        return [option["flag"]] if bool(value) == (kind == "on") else []
    text = os.fspath(value) if kind == "path" else str(value)
    return [] if text == option["default"] else [option["flag"], text]


@dataclass
class ServerProcess:
    """Start `loadbench-server` with the given flags; `with` waits until it listens.

    Arguments map to the binary's flags: workers -> --workers, tls -> --tls,
    header_timeout_ms -> --header-timeout-ms, and so on (None = the binary's default);
    `extra_args` are passed through verbatim. `unix`: plain HTTP (and h2c) on this unix socket
    instead of a TCP port (--unix); load it with ``loadbench.run(server.url(), unix_socket=...)``. `cpus` pins the process (taskset-style).
    `cgroup=True` (default) starts it in a cgroup of its own, so a Sampler of its pid reads
    the exact CPU of everything it runs (`cgroup_path`; when none can be made,
    `cgroup_note` says why and sampling falls back to /proc). The cgroup is removed at stop.
    `allocations=True` starts it with the allocation counter preloaded (loadbench.core.allocations):
    a Sampler of its pid then reports its heap allocations per window.
    """

    workers: int = 1
    host: str = "127.0.0.1"
    port: int = 0
    unix: Optional[str] = None  # --unix PATH: the plain listener is this socket, not `port`
    tls: bool = False
    http: bool = True
    tls_port: int = 0
    cert: Optional[str] = None
    key: Optional[str] = None
    max_body: Optional[int] = None
    header_timeout_ms: Optional[int] = None
    idle_timeout_ms: Optional[int] = None
    accept: Optional[str] = None  # "reuseport" (default) or "shared"
    h2: bool = True  # h2c (prior knowledge) on the HTTP port, ALPN h2 on the TLS port
    h2_max_streams: Optional[int] = None  # SETTINGS_MAX_CONCURRENT_STREAMS (binary default 100)
    h2_max_requests: Optional[int] = None  # GOAWAY after this many streams (0/None = never)
    h3: bool = False  # HTTP/3 over UDP on tls_port's number (needs tls); TCP answers carry Alt-Svc
    h3_0rtt: bool = False  # HTTP/3: accept 0-RTT early data on resumed connections (needs h3)
    tls_resumption: bool = True  # False: no session cache or tickets, every handshake full
    extra_args: Sequence[str] = ()
    cpus: Optional[Sequence[int]] = None
    binary: Optional[str] = None  # another loadbench-server executable (default: the installed one)
    ready_timeout: float = 10.0
    cgroup: bool = True
    allocations: bool = False
    proc: Optional[subprocess.Popen] = field(default=None, init=False, repr=False)
    allocation_counter: Optional[AllocationCounter] = field(default=None, init=False, repr=False)
    cgroup_note: str = field(default="", init=False)
    _cgroup: Optional[ServerCgroup] = field(default=None, init=False, repr=False)
    ready: dict = field(default_factory=dict, init=False)
    stopped: dict = field(default_factory=dict, init=False)
    _stderr_file: Any = field(default=None, init=False, repr=False)
    _collected: bool = field(default=False, init=False, repr=False)

    def argv(self) -> list[str]:
        """The binary and its flags: every option (server_options()) whose field here is set
        and differs from the binary's default, then `extra_args`."""
        args = [str(self.binary or server_binary())]
        for option in server_options():
            args += option_args(option, getattr(self, option["keyword"]))
        return args + list(self.extra_args)

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> "ServerProcess":
        cpus = set(self.cpus) if self.cpus is not None else None
        if cpus is not None:
            available = os.sched_getaffinity(0)
            if not cpus or not cpus <= available:
                raise ConfigError(
                    f"cannot pin loadbench-server to CPUs {sorted(cpus)}: available are "
                    f"{','.join(map(str, sorted(available)))}"
                )
        self._stderr_file = tempfile.TemporaryFile()
        env = None
        if self.allocations:
            self.allocation_counter = AllocationCounter.create("beast")
            env = self.allocation_counter.environment(os.environ)
        group: Optional[ServerCgroup] = None
        if self.cgroup:
            group, self.cgroup_note = ServerCgroup.create("beast")

        def preexec() -> None:
            die_with_parent()  # never outlive the loadbench (or test) that started it
            if group is not None:
                group.join()
            if cpus is not None:
                os.sched_setaffinity(0, cpus)

        try:
            self.proc = subprocess.Popen(
                self.argv(),
                stdout=subprocess.PIPE,
                stderr=self._stderr_file,
                preexec_fn=preexec,
                env=env,
            )
        except BaseException:
            if group is not None:
                group.remove()
            self._remove_counter()
            raise
        if group is not None:
            if group.confirm(self.proc.pid):
                self._cgroup = group
            else:
                self.cgroup_note = f"the server could not be moved into {group.path}"
        line = self._read_line(self.ready_timeout)
        if line is None:
            self.kill()
            raise ServerError(
                f"loadbench-server did not become ready: {self.stderr_text() or 'no output'}"
            )
        try:
            msg = json.loads(line)
        except ValueError:
            self.kill()
            raise ServerError(
                f"loadbench-server printed an unexpected first line: {line!r}"
            ) from None
        if msg.get("event") != "ready":
            try:  # the binary exits right after its error line: 2 = a bad flag, 1 = could not start
                code = self.proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                code = None
            self.kill()
            if code == 2 and msg.get("error"):
                raise ConfigError(msg["error"])
            raise ServerError(f"loadbench-server failed to start: {msg.get('error') or line}")
        self.ready = msg
        return self

    def _read_line(self, timeout: float) -> Optional[str]:
        assert self.proc is not None and self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        buf = b""
        fd = self.proc.stdout.fileno()
        try:
            while b"\n" not in buf:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(remaining):
                    return None
                chunk = os.read(fd, 4096)
                if not chunk:
                    return buf.decode(errors="replace") or None
                buf += chunk
        finally:
            sel.close()
        return buf.split(b"\n", 1)[0].decode(errors="replace")

    def stop(self, timeout: float = 10.0) -> dict:
        """Graceful stop (SIGTERM); returns the counters line the server printed at exit.

        Also collects that line when the server already stopped on its own (e.g. a Ctrl-C
        that reached it directly), since it is still waiting in the pipe.
        """
        if self.proc is None or self._collected:
            return self.stopped
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise ServerError(
                f"loadbench-server (pid {self.pid}) did not stop within {timeout} s"
            ) from None
        self._collected = True
        self._remove_cgroup()
        for line in out.decode(errors="replace").splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("event") == "stopped":
                self.stopped = msg
        return self.stopped

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._remove_cgroup()

    def _remove_cgroup(self) -> None:
        if self._cgroup is not None and (self.proc is None or self.proc.poll() is not None):
            self._cgroup.remove()
            self._cgroup = None
        if self.proc is None or self.proc.poll() is not None:
            self._remove_counter()

    def _remove_counter(self) -> None:
        if self.allocation_counter is not None:
            self.allocation_counter.remove()
            self.allocation_counter = None

    @property
    def cgroup_path(self) -> Optional[str]:
        """The server's own cgroup while it runs (None: none could be made, see cgroup_note)."""
        return str(self._cgroup.path) if self._cgroup is not None else None

    def stderr_text(self) -> str:
        if self._stderr_file is None:
            return ""
        self._stderr_file.seek(0)
        return self._stderr_file.read().decode(errors="replace").strip()

    # -- facts -------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def http_port(self) -> Optional[int]:
        return self.ready.get("http_port")

    @property
    def https_port(self) -> Optional[int]:
        return self.ready.get("https_port")

    @property
    def unix_socket(self) -> Optional[str]:
        """The socket path of a server started with `unix` (None: it listens on TCP)."""
        return self.ready.get("unix")

    def url(self, path: str = "/", https: bool = False) -> str:
        """The URL of `path`; for a unix-socket server http://localhost{path}, which is what
        its requests carry (pass ``unix_socket=server.unix_socket`` to reach it)."""
        if self.unix_socket is not None and not https:
            return f"http://localhost{path}"
        port = self.https_port if https else self.http_port
        if port is None:
            raise ServerError(f"this server has no {'https' if https else 'http'} listener")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if https else 'http'}://{host}:{port}{path}"

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            self.kill()
