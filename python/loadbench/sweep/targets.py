"""What a sweep measures: the servers ("targets"), how each is launched, pinned and probed.

Three kinds of target:

- ``beast``: the embedded Boost.Beast reference server (``loadbench-server``) through
  :class:`loadbench.ServerProcess`; workers -> ``--workers``, https and h2 -> ``--tls`` (h2c
  prior knowledge on the plain port, ALPN h2 on the TLS port). It serves http, https, h2c and h2,
  and h3 (``--h3``: QUIC on the TLS port's number over UDP) when the installed
  ``loadbench-server --help`` lists ``--h3`` (:func:`beast_serves_h3`).
- ``command``: any external server. ``argv`` (http), ``https_argv`` (HTTP/1.1 over TLS),
  ``h2c_argv`` (HTTP/2 cleartext, prior knowledge), ``h2_argv`` (HTTP/2 over TLS, ALPN h2) and
  ``h3_argv`` (HTTP/3 over QUIC: UDP on ``{port}``, the number of the TCP port loadbench chose)
  say how to start it for each protocol; a protocol without one is not served, and
  ``protocol_notes`` says why (the report prints n/a with that reason). They are
  lists of strings with placeholders replaced at launch:
  ``{port}`` a free TCP port chosen by loadbench, ``{workers}`` the sweep's worker count,
  ``{cert}``/``{key}`` a self-signed EC P-256 PEM pair (CN=localhost), ``{run_dir}`` a private
  scratch directory, ``{peers}`` the peers directory, ``{python}`` this interpreter. ``env``
  values take the same placeholders, and ``workers_env`` names the variable that carries the
  worker count the way that runtime expects it (NODE_WORKERS, TOKIO_WORKER_THREADS, ...);
  LOADBENCH_WORKERS is always set too. ``cwd`` is where it runs. Ready = a TCP connect and one
  probe request answered with an HTTP status line (h3: one request answered over QUIC by the
  generator) within ``ready_timeout``; otherwise one
  :class:`ServerError` that quotes the server's stderr.
- ``url``: a server that is already running (``url``, ``https_url``, ``h2c_url``, ``h2_url``,
  ``h3_url``);
  no lifecycle, sampled only when ``pid`` is given.

The peer registry: ``bench/peers/peers.toml`` declares every peer (and ``beast``) once, as
``[[targets]]`` tables checked by the sweep file's own rules (loadbench.sweep.file);
:func:`peer_registry` reads it, :func:`default_peer_targets` is its peers without Beast, and the
bench drivers start its entries with :func:`launch` too. A ``version`` command (with
``version_pattern``) says what the reports' environment block prints for a peer, and ``label``
the name the bench drivers' reports print for it (per protocol when that differs).

Protocols (a sweep's ``protocols``): ``http`` (HTTP/1.1), ``https`` (HTTP/1.1 over TLS), ``h2c``
(HTTP/2 cleartext, prior knowledge), ``h2`` (HTTP/2 over TLS, ALPN) and ``h3`` (HTTP/3 over
QUIC, https URLs only; a build with ngtcp2 + nghttp3). ``workers`` overrides the
sweep's worker count for one target and ``variant_of`` names the target it is a configuration of
(the report's variant speedup table: e.g. Beast with 1 and with 2 workers).

Pinning: server and generator get disjoint CPU sets (default: the first half of the CPUs this
process may use for servers, the second half for the generator; on 2 cores CPU 0 and CPU 1),
applied with ``sched_setaffinity`` in the child before exec - ``taskset`` semantics, inherited
by every process and thread the server spawns.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Union

from ..core import protocols
from ..core._core import build_info, http3_available
from ..core.allocations import AllocationCounter
from ..core.certificates import self_signed
from ..core.cgroup import ServerCgroup
from ..core.errors import ConfigError, ServerError
from ..core.paths import server_binary
from ..core.process import die_with_parent
from ..core.run import run
from ..core.server import ServerProcess

KINDS = ("beast", "command", "url")


@functools.lru_cache(maxsize=None)
def beast_serves_h3(binary: Optional[str] = None) -> bool:
    """Whether ``loadbench-server`` (the installed one, or ``binary``) serves HTTP/3: its --help
    lists ``--h3``. Asked once per binary; a server that cannot run serves nothing (its start
    then fails with its own error)."""
    try:
        out = subprocess.run(
            [str(binary or server_binary()), "--help"], capture_output=True, text=True, timeout=10
        )
    except (OSError, ServerError, subprocess.TimeoutExpired):  # ServerError: none installed
        return False
    return re.search(r"(^|\s)--h3\b", out.stdout + out.stderr) is not None


def h3_unavailable_reason() -> Optional[str]:
    """Why the generator cannot speak HTTP/3 in this build, or None when it can."""
    if http3_available():
        return None
    return (
        "this loadbench build has no HTTP/3 (apt-get install libngtcp2-dev "
        "libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev, then reinstall loadbench)"
    )


@dataclass
class Target:
    """One server to measure. See the module docstring for the three kinds and placeholders."""

    name: str
    kind: str = "beast"
    argv: Sequence[str] = ()
    https_argv: Optional[Sequence[str]] = None
    h2c_argv: Optional[Sequence[str]] = None
    h2_argv: Optional[Sequence[str]] = None
    h3_argv: Optional[Sequence[str]] = None
    protocol_notes: dict = field(default_factory=dict)  # protocol -> why it is not served
    env: dict = field(default_factory=dict)
    workers_env: Optional[str] = None
    cwd: Optional[str] = None
    requires: Sequence[str] = ()
    requires_note: str = ""  # where the requirements come from, told when one is missing
    url: Optional[str] = None
    https_url: Optional[str] = None
    h2c_url: Optional[str] = None
    h2_url: Optional[str] = None
    h3_url: Optional[str] = None
    pid: Optional[int] = None
    tree: bool = True
    ready_timeout: float = 10.0
    # seconds of load a freshly started server gets at least before its first cell: a JIT
    # runtime (PyPy, YJIT, V8) compiles its hot path only after thousands of requests, and may
    # plateau before it does (the sweep's settling stops at the first plateau otherwise)
    warmup: float = 0.0
    probe_path: str = "/"
    unsupported_workloads: Sequence[str] = ()
    description: str = ""
    workers: Optional[int] = None  # overrides the sweep's worker count for this target
    variant_of: Optional[str] = None  # the target this one is another configuration of
    # the target this one is a copy of (SweepPlan.twins: the same server listed twice, an A/A
    # check of the sweep's noise: the report must read the pair as ≈ everywhere)
    twin_of: Optional[str] = None
    version: Sequence[str] = ()  # a command that prints the server's version (placeholders as argv)
    version_pattern: Optional[str] = (
        None  # the part of that output to keep (default: its first line)
    )
    # what the allocation counter sees of its heap (libc malloc only; the report prints it beside
    # allocs/req): e.g. "libc malloc; V8's JavaScript heap is its own and not counted"
    allocator: str = ""
    # the name the bench/*.py reports print for this server (default: name); a table
    # protocol -> name where it differs by protocol (node:http serves HTTP/1.1, node:http2 HTTP/2)
    label: Union[str, dict] = ""

    def __post_init__(self) -> None:
        if not self.name or any(c in self.name for c in "|/\n"):
            raise ConfigError(
                f"target name {self.name!r} must be non-empty without '|', '/' or newlines"
            )
        if self.kind not in KINDS:
            raise ConfigError(
                f"target {self.name!r}: kind must be one of {', '.join(KINDS)}, not {self.kind!r}"
            )
        if self.kind == "command" and not any(self.argv_for(p) for p in protocols.NAMES):
            # an HTTP/2-only server (node:http2) has h2c_argv/h2_argv and no argv
            raise ConfigError(
                f"target {self.name!r}: a command target needs argv (or https_argv, h2c_argv, "
                "h2_argv, h3_argv)"
            )
        if self.kind == "url" and not any(self.url_for(p) for p in protocols.NAMES):
            raise ConfigError(
                f"target {self.name!r}: a url target needs url, https_url, h2c_url, h2_url or h3_url"
            )
        if self.h3_url is not None and not self.h3_url.startswith("https://"):
            raise ConfigError(
                f"target {self.name!r}: h3_url must be an https:// URL (HTTP/3 runs over QUIC "
                f"with TLS), not {self.h3_url!r}"
            )
        if self.ready_timeout <= 0:
            raise ConfigError(f"target {self.name!r}: ready_timeout must be positive")
        if not self.warmup >= 0:
            raise ConfigError(f"target {self.name!r}: warmup must be >= 0 seconds")
        if self.workers is not None and (
            isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1
        ):
            raise ConfigError(
                f"target {self.name!r}: workers must be a positive integer, not {self.workers!r}"
            )
        for key in self.protocol_notes:
            if key not in protocols.NAMES:
                raise ConfigError(
                    f"target {self.name!r}: protocol_notes.{key}: not one of {', '.join(protocols.NAMES)}"
                )
        if isinstance(self.label, dict):
            for key in self.label:
                if key not in protocols.NAMES:
                    raise ConfigError(
                        f"target {self.name!r}: label.{key}: not one of {', '.join(protocols.NAMES)}"
                    )
        if self.version_pattern is not None:
            try:
                re.compile(self.version_pattern)
            except re.error as exc:
                raise ConfigError(
                    f"target {self.name!r}: version_pattern is no regular expression: {exc}"
                ) from None

    def version_text(self, peers_dir: Optional[Path] = None) -> str:
        """What the server says its version is ("nginx/1.22.1"; Beast: "loadbench 0.1.0"), or "n/a"."""
        if self.kind == "beast":
            return f"loadbench {build_info()['version']}"
        if not self.version:
            return "n/a"
        values = {"peers": str(peers_dir or ""), "python": sys.executable}
        return program_version(
            [_expand(str(a), values) for a in self.version], self.version_pattern
        )

    def label_for(self, protocol: str) -> str:
        """The name bench reports print for this server over ``protocol`` (default: its name)."""
        label = self.label.get(protocol) if isinstance(self.label, dict) else self.label
        return label or self.name

    def argv_for(self, protocol: str) -> Optional[Sequence[str]]:
        """The command line that starts this (command) target for ``protocol``, None if it has none."""
        return {
            "http": self.argv or None,
            "https": self.https_argv,
            "h2c": self.h2c_argv,
            "h2": self.h2_argv,
            "h3": self.h3_argv,
        }.get(protocol)

    def url_for(self, protocol: str) -> Optional[str]:
        return {
            "http": self.url,
            "https": self.https_url,
            "h2c": self.h2c_url,
            "h2": self.h2_url,
            "h3": self.h3_url,
        }.get(protocol)

    @property
    def protocols(self) -> list[str]:
        """The protocols this target declares it serves (installed or not)."""
        if self.kind == "beast":
            return [p for p in protocols.NAMES if p != "h3" or beast_serves_h3()]
        get = self.url_for if self.kind == "url" else self.argv_for
        return [p for p in protocols.NAMES if get(p) is not None]

    def unavailable_reason(self, protocol: str, peers_dir: Optional[Path] = None) -> Optional[str]:
        """Why this target cannot serve ``protocol`` on this machine, or None when it can."""
        if protocol not in protocols.NAMES:
            return (
                f"{protocol!r} is not a protocol loadbench measures ({', '.join(protocols.NAMES)})"
            )
        if protocol == "h3" and h3_unavailable_reason() is not None:
            return h3_unavailable_reason()
        if self.kind == "beast":
            if protocol == "h3" and not beast_serves_h3():
                return "this loadbench-server has no --h3 (HTTP/3): it serves http, https, h2c, h2"
            return None
        if self.kind == "url":
            if self.url_for(protocol) is None:
                return self.protocol_notes.get(protocol) or f"no {protocol} URL given"
            return None
        argv = self.argv_for(protocol)
        if argv is None:
            served = ", ".join(self.protocols) or "nothing"
            return (
                self.protocol_notes.get(protocol)
                or f"{self.name} does not serve {protocol} (serves {served})"
            )
        missing = self._missing_requirement(peers_dir)
        if missing is not None:
            # a runtime that cannot be had everywhere (CPython 3.13 on Debian 12) says why
            return f"{missing} - {self.requires_note}" if self.requires_note else missing
        if protocols.get(protocol).tls and _which("openssl") is None:
            return "openssl (needed to make the self-signed certificate) is not installed"
        return None

    def skip_note(
        self, reason: str, protocols_: Sequence[str], peers_dir: Optional[Path] = None
    ) -> tuple[tuple[str, str], str]:
        """(key, line) a sweep says when it skips this target for ``reason``: the line names
        every protocol of ``protocols_`` that the same reason skips (a runtime not installed:
        all of them), and the key is the same for each, so the reason is said once per sweep
        (issue 58: once per protocol, a missing runtime's sentence came four times)."""
        same = [p for p in protocols_ if self.unavailable_reason(p, peers_dir) == reason]
        return (self.name, reason), f"skipping {self.name} {'/'.join(same)}: {reason}"

    def _missing_requirement(self, peers_dir: Optional[Path]) -> Optional[str]:
        for need in self.requires:
            path = _expand(need, {"peers": str(peers_dir or "")})
            if path.startswith("python-module:"):  # importable by {python} (this interpreter)
                module = path.split(":", 1)[1]
                if importlib.util.find_spec(module) is None:
                    return (
                        f"the Python module {module} is not installed in {sys.executable} "
                        "(bash .ci/install.sh brings hypercorn: the peers extra)"
                    )
            elif "/" in path:
                if not Path(self.cwd or ".", path).exists():
                    return f"{path} is missing"
            elif _which(path) is None:
                return f"{path} is not installed"
        return None


def program_version(argv: Sequence[str], pattern: Optional[str] = None) -> str:
    """Run ``argv`` and keep the match of ``pattern`` in what it printed (stdout, then stderr:
    nginx -v writes there), else its first line; "n/a" when it cannot run. Asked once per
    process: a sweep names the version in every record of every protocol's start."""
    return _program_version(tuple(argv), pattern)


@functools.lru_cache(maxsize=None)
def _program_version(argv: tuple, pattern: Optional[str]) -> str:
    try:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "n/a"
    text = (out.stdout + out.stderr).strip()
    match = re.search(pattern, text) if pattern else None
    return match.group(0) if match else text.splitlines()[0] if text else "n/a"


def _which(program: str) -> Optional[str]:
    # Debian installs nginx into /usr/sbin, which a non-root PATH often lacks.
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")


def _expand(text: str, values: dict) -> str:
    """Replace only the known {name} placeholders, so literal braces (JSON, nginx) survive."""
    for key, value in values.items():
        text = text.replace("{" + key + "}", str(value))
    return text


def default_cpu_split(available: Optional[Sequence[int]] = None) -> tuple[list[int], list[int]]:
    """(server CPUs, generator CPUs): the first half for servers, the second for the generator.

    With a single CPU both share it (the environment block then says the run was unpinned).
    """
    cpus = sorted(available if available is not None else os.sched_getaffinity(0))
    if len(cpus) < 2:
        return list(cpus), list(cpus)
    half = len(cpus) // 2
    return cpus[:half], cpus[half:]


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def free_udp_tcp_port(host: str = "127.0.0.1") -> int:
    """A port number free for TCP and UDP both: an HTTP/3 server listens on UDP, and most serve
    HTTPS on the same number over TCP (caddy, loadbench-server --h3, the quic-go peer)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(50):
        port = free_port(host)
        with socket.socket(family, socket.SOCK_DGRAM) as udp:
            try:
                udp.bind((host, port))
            except OSError:
                continue
        return port
    raise ServerError(f"no port on {host} is free for both TCP and UDP")


def self_signed_cert(directory: Path) -> tuple[Path, Path]:
    """A self-signed EC P-256 certificate for CN=localhost, made once per directory."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    if cert.exists() and key.exists():
        return cert, key
    directory.mkdir(parents=True, exist_ok=True)
    return self_signed(cert, key, days=30, extensions=["subjectAltName=DNS:localhost,IP:127.0.0.1"])


# The HTTP/2 client connection preface and an empty SETTINGS frame (RFC 9113 3.4).
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def probe(
    host: str, port: int, path: str, https: bool, timeout: float, http2: bool = False
) -> Optional[str]:
    """One request on a fresh connection; returns None when an HTTP status line came back
    (``http2``: when ALPN chose h2 over TLS and the server's first frame is SETTINGS), else a
    short reason (connection refused, TLS failure, no answer)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            sock: socket.socket = raw
            if https:
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
                if http2:
                    ctx.set_alpn_protocols(["h2"])
                sock = ctx.wrap_socket(raw, server_hostname="localhost")
                if http2 and sock.selected_alpn_protocol() != "h2":
                    return f"ALPN chose {sock.selected_alpn_protocol()!r}, not h2"
            if http2:
                sock.sendall(H2_PREFACE)
                head = b""
                while len(head) < 9:
                    chunk = sock.recv(9 - len(head))
                    if not chunk:
                        break
                    head += chunk
                if len(head) == 9 and head[3] == 0x4:
                    return None
                return f"probe got {head[:16]!r} instead of an HTTP/2 SETTINGS frame"
            hostport = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            sock.sendall(
                f"GET {path} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\n\r\n".encode()
            )
            head = sock.recv(64)
            if head.startswith(b"HTTP/1."):
                return None
            return f"probe got {head[:32]!r} instead of an HTTP status line"
    except (OSError, ssl.SSLError) as exc:
        return f"probe failed: {exc}"


def probe_h3(url: str, timeout: float) -> Optional[str]:
    """One HTTP/3 request to ``url`` (https://) by the generator itself (QUIC has no cheap
    half-way probe: the handshake is the request's); None when a response came back, else the
    generator's error."""
    try:
        result = run(
            url,
            protocol="h3",
            requests=1,
            connections=1,
            threads=1,
            timeout=timeout,
            insecure=True,
        )
    except Exception as exc:  # a run the generator refuses is not a server that is ready
        return f"h3 probe failed: {exc}"
    if result.responses >= 1:
        return None
    errors = ", ".join(f"{k} {v}" for k, v in sorted(result.errors.items()) if v) or "no answer"
    return f"h3 probe got no response ({errors})"


def wait_ready_h3(server: "RunningServer", url: str, deadline: float) -> None:
    """Wait until ``server`` answers one HTTP/3 request at ``url`` (its UDP listener may come up
    after its TCP one), or raise ServerError with the last reason and its stderr."""
    reason = "no answer"
    while time.monotonic() < deadline:
        if not server.alive():
            raise ServerError(f"{server.target.name} never became ready: {server.death_note()}")
        reason = probe_h3(url, timeout=min(1.0, max(0.1, deadline - time.monotonic()))) or ""
        if not reason:
            return
        time.sleep(0.05)
    tail = server.stderr_tail(500)
    raise ServerError(
        f"{server.target.name} did not answer HTTP/3 at {url} within "
        f"{server.target.ready_timeout:g} s ({reason}); stderr: {tail or '(empty)'}"
    )


@dataclass
class RunningServer:
    """A launched (or already running) server for one protocol: where to send load, whom to sample."""

    target: Target
    protocol: str
    base_url: str
    pid: Optional[int]
    argv: list = field(default_factory=list)
    workers: Optional[int] = None
    cpus: Optional[list] = None
    _beast: object = None
    _proc: Optional[subprocess.Popen] = None
    _stderr: object = None
    _run_dir: Optional[tempfile.TemporaryDirectory] = None
    _cgroup: Optional[ServerCgroup] = None
    cgroup_note: str = ""
    unix_socket: Optional[str] = None  # transport "unix": load goes to base_url over this socket
    _counter: Optional[AllocationCounter] = None  # a command target's allocation counter
    version: Optional[str] = None  # what the server says it is (Target.version_text)

    def alive(self) -> bool:
        if self._beast is not None:
            return self._beast.proc is not None and self._beast.proc.poll() is None
        if self._proc is not None:
            return self._proc.poll() is None
        if self.pid is not None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
        return True

    def stderr_tail(self, limit: int = 2000) -> str:
        if self._beast is not None:
            text = self._beast.stderr_text()
        elif self._stderr is not None:
            self._stderr.seek(0)
            text = self._stderr.read().decode(errors="replace").strip()
        else:
            text = ""
        return text[-limit:]

    def death_note(self) -> str:
        """'exited with code 3: <stderr>' for a server that is gone."""
        proc = self._beast.proc if self._beast is not None else self._proc
        code = proc.poll() if proc is not None else None
        how = f"signal {-code}" if code is not None and code < 0 else f"code {code}"
        tail = self.stderr_tail(500)
        return f"{self.target.name} exited ({how})" + (f": {tail}" if tail else " with no stderr")

    def describe(self) -> dict:
        cgroup = (
            self._beast.cgroup_path
            if self._beast is not None
            else (str(self._cgroup.path) if self._cgroup is not None else None)
        )
        note = self._beast.cgroup_note if self._beast is not None else self.cgroup_note
        return {
            "target": self.target.name,
            "kind": self.target.kind,
            "protocol": self.protocol,
            "url": self.base_url,
            "pid": self.pid,
            "argv": self.argv,
            "workers": self.workers,
            "cpus": self.cpus,
            "cgroup": cgroup,
            **({"cgroup_note": note} if note and cgroup is None else {}),
            **({"unix_socket": self.unix_socket} if self.unix_socket else {}),
            **({"version": self.version} if self.version else {}),
        }

    def stop(self, timeout: float = 5.0) -> None:
        try:
            if self._beast is not None:
                try:
                    self._beast.stop(timeout=timeout)
                finally:
                    self._beast.kill()
            elif self._proc is not None and self._proc.poll() is None:
                self._proc.send_signal(signal.SIGTERM)
                try:
                    self._proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    # Our own session: the group holds only what this server spawned.
                    os.killpg(self._proc.pid, signal.SIGKILL)
                    self._proc.wait()
        finally:
            if self._proc is not None and self._proc.poll() is not None:
                try:  # leftovers of a server whose master died (nginx workers, forks)
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if self._cgroup is not None:  # also takes whatever escaped the process group
                self._cgroup.remove()
                self._cgroup = None
            if self._run_dir is not None:
                self._run_dir.cleanup()
                self._run_dir = None
            if self._counter is not None:
                self._counter.remove()
                self._counter = None


def launch(
    target: Target,
    protocol: str,
    *,
    workers: int,
    cpus: Optional[Sequence[int]],
    peers_dir: Optional[Path] = None,
    cert_dir: Optional[Path] = None,
    host: str = "127.0.0.1",
    env: Optional[dict] = None,
    binary: Optional[str] = None,
    transport: str = "tcp",
    allocations: bool = False,
) -> RunningServer:
    """Start ``target`` for ``protocol`` pinned to ``cpus`` and wait until it answers
    (``target.workers``, when set, replaces ``workers``). ``env``: variables added for this
    launch only (a command target's own knobs, e.g. NGINX_CONNECTIONS); ``binary``: another
    loadbench-server executable for a beast target (default: the installed one); ``transport``
    "unix": a beast target on a unix socket in a private directory (http and h2c only);
    ``allocations``: start it with the allocation counter (loadbench.core.allocations; a "url"
    target, not started here, is not counted)."""
    if protocol not in protocols.NAMES:
        raise ConfigError(f"protocol must be one of {', '.join(protocols.NAMES)}, not {protocol!r}")
    cpu_list = sorted(cpus) if cpus is not None else None
    workers = target.workers or workers
    if transport == "unix" and (target.kind != "beast" or protocols.get(protocol).tls):
        raise ConfigError(
            f"transport 'unix' is the embedded server's plain listener (http, h2c): not "
            f"{target.name!r} ({target.kind}) over {protocol}"
        )
    if target.kind == "url":
        url = target.url_for(protocol)
        if url is None:
            raise ConfigError(f"target {target.name!r} has no {protocol} URL")
        return RunningServer(target, protocol, url.rstrip("/"), target.pid, cpus=None)
    if target.kind == "beast":
        https = protocols.get(protocol).tls
        run_dir = (
            tempfile.TemporaryDirectory(prefix="loadbench-beast-") if transport == "unix" else None
        )
        # TLS: full handshakes only, like the nginx peer (ssl_session_cache off, tickets off);
        # h3: QUIC on the TLS port's number over UDP (loadbench-server --h3)
        if protocol == "h3" and not beast_serves_h3(binary):
            raise ConfigError(
                f"target {target.name!r}: this loadbench-server has no --h3, so no h3"
            )
        beast = ServerProcess(
            workers=workers,
            host=host,
            unix=os.path.join(run_dir.name, "beast.sock") if run_dir is not None else None,
            tls=https,
            http=not https,
            tls_resumption=not https,
            h3=protocol == "h3",
            cpus=cpu_list,
            ready_timeout=target.ready_timeout,
            binary=binary,
            allocations=allocations,
        )
        try:
            beast.start()
        except BaseException:
            beast.kill()  # Ctrl-C while it starts must not leave it running
            if run_dir is not None:
                run_dir.cleanup()
            raise
        server = RunningServer(
            target,
            protocol,
            beast.url("", https=https),
            beast.pid,
            argv=beast.argv(),
            workers=workers,
            cpus=cpu_list,
            _beast=beast,
            _run_dir=run_dir,
            unix_socket=beast.unix_socket,
        )
        if protocol == "h3":
            try:
                wait_ready_h3(
                    server,
                    server.base_url + target.probe_path,
                    time.monotonic() + target.ready_timeout,
                )
            except BaseException:
                server.stop()
                raise
        return server
    return _launch_command(
        target, protocol, workers, cpu_list, peers_dir, cert_dir, host, env or {}, allocations
    )


def _launch_command(
    target: Target,
    protocol: str,
    workers: int,
    cpus: Optional[list],
    peers_dir: Optional[Path],
    cert_dir: Optional[Path],
    host: str,
    extra_env: dict,
    allocations: bool = False,
) -> RunningServer:
    https = protocols.get(protocol).tls
    run_dir = tempfile.TemporaryDirectory(prefix=f"loadbench-{target.name}-")
    port = free_udp_tcp_port(host) if protocol == "h3" else free_port(host)
    values = {
        "port": port,
        "workers": workers,
        "run_dir": run_dir.name,
        "peers": str(peers_dir or ""),
        "python": sys.executable,
    }
    if https:
        cert, key = self_signed_cert(cert_dir or Path(run_dir.name))
        values.update(cert=str(cert), key=str(key))
    template = target.argv_for(protocol)
    if template is None:
        run_dir.cleanup()
        raise ConfigError(f"target {target.name!r} has no command for {protocol}")
    argv = [_expand(str(a), values) for a in template]
    env = dict(os.environ)
    env.update({k: _expand(str(v), values) for k, v in {**target.env, **extra_env}.items()})
    env["LOADBENCH_WORKERS"] = str(workers)
    if target.workers_env:
        env[target.workers_env] = str(workers)
    counter = AllocationCounter.create(target.name) if allocations else None
    if counter is not None:
        env = counter.environment(env)
    stderr = tempfile.TemporaryFile()
    # A cgroup of its own: the exact CPU of everything the command runs (workers, forks).
    group, note = ServerCgroup.create(target.name) if target.tree else (None, "")

    def preexec() -> None:
        die_with_parent()
        if group is not None:
            group.join()
        if cpus:
            os.sched_setaffinity(0, cpus)

    try:
        proc = subprocess.Popen(
            argv,
            cwd=target.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=preexec,
            start_new_session=True,
        )
    except BaseException as exc:
        run_dir.cleanup()
        if group is not None:
            group.remove()
        if counter is not None:
            counter.remove()
        if isinstance(exc, OSError):
            raise ServerError(f"{target.name}: cannot start {argv[0]}: {exc}") from None
        raise
    if group is not None and not group.confirm(proc.pid):
        note, group = f"{target.name} could not be moved into {group.path}", None
    server = RunningServer(
        target,
        protocol,
        f"{'https' if https else 'http'}://{host}:{port}",
        proc.pid,
        argv=argv,
        workers=workers,
        cpus=cpus,
        _proc=proc,
        _stderr=stderr,
        _run_dir=run_dir,
        _cgroup=group,
        cgroup_note=note,
        _counter=counter,
    )
    deadline = time.monotonic() + target.ready_timeout
    if protocol == "h3":
        try:
            wait_ready_h3(server, server.base_url + target.probe_path, deadline)
        except BaseException:
            server.stop()  # also on Ctrl-C: nothing we started outlives us
            raise
        return server
    reason = "no answer"
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServerError(f"{target.name} never became ready: {server.death_note()}")
            reason = (
                probe(
                    host,
                    port,
                    target.probe_path,
                    https,
                    timeout=1.0,
                    http2=protocols.get(protocol).wire == "h2",
                )
                or ""
            )
            if not reason:
                return server
            time.sleep(0.05)
    except BaseException:
        server.stop()  # also on Ctrl-C: nothing we started outlives us
        raise
    tail = server.stderr_tail(500)
    server.stop()
    raise ServerError(
        f"{target.name} was not ready within {target.ready_timeout:g} s on port {port} "
        f"({reason}); stderr: {tail or '(empty)'}"
    )
