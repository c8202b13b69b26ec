"""The load generators the benchmarks drive: how to call each one and how to read its output.

Every adapter returns the generator's OWN exact response count (never rps x duration) and its
measured window, parsed from the tool's most exact output mode: wrk's Lua `done` hook,
h2load's status-code line, hey's status-code distribution, bombardier's and oha's JSON, ab's
"Complete requests" and loadbench's --json file. The CPU the generator spent comes from
os.wait4()'s rusage (bench_drivers.child.run_child), the same way for every tool.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from loadbench.core._core import build_info
from loadbench.core.errors import ConfigError
from loadbench.core.options import check_tls_library

from .child import ChildRun, run_child, taskset
from .syscalls import parse_strace_counts

WRK_REPORT_LUA = Path(__file__).with_name(
    "wrk_report.lua"
)  # wrk's exact counts from its `done` hook


@dataclass
class LoadResult:
    """What one generator run measured, in the generator's own words."""

    responses: int  # every HTTP response received, whatever its status
    non_2xx: int
    errors: int  # connect/read/write/timeout errors (not responses)
    duration_s: float  # the window the tool measured its responses over
    latency_us: dict[str, float] = field(default_factory=dict)
    connections: Optional[int] = None  # connections opened, when the tool reports it
    extra: dict = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.responses / self.duration_s if self.duration_s > 0 else 0.0


class UnsupportedMode(Exception):
    """The tool cannot run this mode (e.g. h2load has no connection-per-request mode)."""


@dataclass
class Generator:
    name: str
    binary: Optional[str]

    missing_reason = "not installed (bash bench/install-peers.sh)"
    # Tools with an open loop (a request rate, latency from the intended send time) run it in
    # the open-loop part with `rate` set.
    has_open_loop = False
    rate: Optional[float] = None

    @property
    def available(self) -> bool:
        return self.binary is not None

    def version(self) -> str:
        raise NotImplementedError

    def argv(
        self, url: str, connections: int, duration_s: int, keepalive: bool, out: Path
    ) -> list[str]:
        raise NotImplementedError

    def parse(self, run: ChildRun, out: Path) -> LoadResult:
        raise NotImplementedError

    def startup_argv(self, url: str, out: Path) -> Optional[list[str]]:
        """A one-request invocation that pays the tool's fixed start-up and shutdown cost, for
        tools where that cost is large enough to show in a 10 s run (None: negligible)."""
        return None

    def startup_cpu_s(self, url: str, cpus: Sequence[int], repeats: int = 3) -> Optional[float]:
        with tempfile.TemporaryDirectory(prefix=f"bench-{self.name}-") as tmp:
            argv = self.startup_argv(url, Path(tmp) / "result.json")
            if argv is None:
                return None
            runs = [run_child(taskset(cpus) + argv, timeout_s=60) for _ in range(repeats)]
        ok = sorted(r.cpu_s for r in runs if r.returncode == 0)
        return ok[len(ok) // 2] if ok else None

    def run(
        self,
        url: str,
        connections: int,
        duration_s: int,
        keepalive: bool,
        cpus: Sequence[int],
        wrap: Sequence[str] = (),
        pinned_wrap: Sequence[str] = (),
        timeout_s: Optional[float] = None,
    ) -> tuple[ChildRun, LoadResult]:
        """One run of the tool pinned to `cpus`. wrap: a command the pinned tool runs under, itself
        not pinned (`perf record ... --`); pinned_wrap: one pinned with it (`strace -c -f ...`)."""
        with tempfile.TemporaryDirectory(prefix=f"bench-{self.name}-") as tmp:
            out = Path(tmp) / "result.json"
            argv = (
                list(wrap)
                + taskset(cpus)
                + list(pinned_wrap)
                + self.argv(url, connections, duration_s, keepalive, out)
            )
            child = self._checked(argv, timeout_s or duration_s * 3 + 30, wrap or pinned_wrap)
            return child, self.parse(child, out)

    def _checked(self, argv: list[str], timeout_s: float, wrap: Sequence[str] = ()) -> ChildRun:
        child = run_child(argv, timeout_s=timeout_s)
        if child.returncode != 0 and not self._nonzero_is_ok(child):
            under = f" under {wrap[0]}" if wrap else ""
            raise RuntimeError(
                f"{self.name}{under} exited {child.returncode}: {(child.stderr or child.stdout)[-600:]}"
            )
        return child

    def _nonzero_is_ok(self, child: ChildRun) -> bool:
        return False

    def syscalls(
        self,
        url: str,
        connections: int,
        duration_s: int,
        cpus: Sequence[int],
        keepalive: bool = True,
    ) -> tuple[LoadResult, dict[str, int], dict[str, int]]:
        """One run (keep-alive, or a new connection per request) under `strace -c -f` (every
        thread): the tool's result, the system calls it made by name, and those of its one-request
        start-up run against the same URL (empty when the tool has none: its start-up is
        negligible), so calls per response can leave start-up out. strace slows the tool many
        times over: only the counts mean anything here."""

        def strace(table: Path) -> list[str]:
            return ["strace", "-c", "-f", "-o", str(table)]

        timeout_s = duration_s * 10 + 60
        with tempfile.TemporaryDirectory(prefix=f"bench-{self.name}-strace-") as tmp:
            table = Path(tmp) / "strace.txt"
            result = self.run(
                url,
                connections,
                duration_s,
                keepalive,
                cpus,
                pinned_wrap=strace(table),
                timeout_s=timeout_s,
            )[1]
            calls = parse_strace_counts(table.read_text())
            startup: dict[str, int] = {}
            one = self.startup_argv(url, Path(tmp) / "one.json")
            if one is not None:
                self._checked(
                    taskset(cpus) + strace(Path(tmp) / "one.txt") + one, timeout_s, ["strace"]
                )
                startup = parse_strace_counts((Path(tmp) / "one.txt").read_text())
        return result, calls, startup


def _first_line_version(argv: list[str], pattern: str) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "n/a"
    match = re.search(pattern, proc.stdout + proc.stderr)
    return match.group(1) if match else "unknown"


def _which(name: str) -> Optional[str]:
    extra = [os.path.expanduser("~/.cargo/bin"), os.path.expanduser("~/go/bin")]
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", "")] + extra))


def _int(pattern: str, text: str, default: Optional[int] = None) -> int:
    match = re.search(pattern, text)
    if match is None:
        if default is not None:
            return default
        raise ValueError(f"output does not match {pattern!r}: {text[-400:]!r}")
    return int(match.group(1))


def _float(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    if match is None:
        raise ValueError(f"output does not match {pattern!r}: {text[-400:]!r}")
    return float(match.group(1))


class Wrk(Generator):
    def __init__(self) -> None:
        super().__init__("wrk", _which("wrk"))

    def version(self) -> str:
        return _first_line_version([self.binary, "-v"], r"(wrk \S+)")

    def argv(self, url, connections, duration_s, keepalive, out):
        args = [
            self.binary,
            "-t1",
            f"-c{connections}",
            f"-d{duration_s}s",
            "--latency",
            "-s",
            str(WRK_REPORT_LUA),
        ]
        if not keepalive:
            args += ["-H", "Connection: close"]
        return args + [url]

    def parse(self, run, out):
        line = next(text for text in run.stdout.splitlines() if text.startswith("LOADBENCH_WRK "))
        data = json.loads(line.split(" ", 1)[1])
        errors = data["errors"]
        return LoadResult(
            responses=data["requests"],
            non_2xx=errors["status"],
            errors=errors["connect"] + errors["read"] + errors["write"] + errors["timeout"],
            duration_s=data["duration_us"] / 1e6,
            latency_us=data["latency_us"],
            extra={"errors": errors},
        )


class H2load(Generator):
    def __init__(self) -> None:
        super().__init__("h2load --h1", _which("h2load"))

    def version(self) -> str:
        return _first_line_version([self.binary, "--version"], r"(nghttp2/\S+)")

    def argv(self, url, connections, duration_s, keepalive, out):
        if not keepalive:
            raise UnsupportedMode("h2load has no connection-per-request mode")
        return [self.binary, "--h1", "-t1", f"-c{connections}", "-D", str(duration_s), url]

    def parse(self, run, out):
        text = run.stdout
        codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
        if codes is None:
            raise ValueError(f"h2load output has no status-code line: {text[-400:]!r}")
        two, three, four, five = (int(g) for g in codes.groups())
        failed = _int(r"requests: .* (\d+) errored", text, 0) + _int(
            r"requests: .* (\d+) timeout", text, 0
        )
        return LoadResult(
            responses=two + three + four + five,
            non_2xx=three + four + five,
            errors=failed,
            duration_s=_float(r"finished in ([\d.]+)s", text),
        )


class Hey(Generator):
    def __init__(self) -> None:
        super().__init__("hey", _which("hey"))

    def version(self) -> str:
        try:
            out = subprocess.run(
                ["dpkg-query", "-W", "-f=${Version}", "hey"], capture_output=True, text=True
            )
            return f"hey {out.stdout.strip()}" if out.stdout.strip() else "hey (version unknown)"
        except OSError:
            return "hey (version unknown)"

    def argv(self, url, connections, duration_s, keepalive, out):
        args = [self.binary, "-z", f"{duration_s}s", "-c", str(connections), "-cpus", "1"]
        if not keepalive:
            args.append("-disable-keepalive")
        return args + [url]

    def parse(self, run, out):
        text = run.stdout
        statuses = {
            int(code): int(n) for code, n in re.findall(r"\[(\d{3})\]\s+(\d+) responses", text)
        }
        error_part = (
            text.split("Error distribution:", 1)[1] if "Error distribution:" in text else ""
        )
        errors = sum(int(n) for n in re.findall(r"^\s+\[(\d+)\]\s", error_part, re.M))
        responses = sum(statuses.values())
        return LoadResult(
            responses=responses,
            non_2xx=sum(n for c, n in statuses.items() if c >= 300),
            errors=errors,
            duration_s=_float(r"Total:\s+([\d.]+) secs", text),
        )


class Bombardier(Generator):
    def __init__(self) -> None:
        super().__init__("bombardier", _which("bombardier"))

    def version(self) -> str:
        # `go install` builds carry no version string of their own; the module version is in the binary.
        go = _which("go")
        if go:
            found = _first_line_version([go, "version", "-m", self.binary], r"\bmod\s+\S+\s+(v\S+)")
            if found not in ("unknown", "n/a"):
                return f"bombardier {found}"
        return _first_line_version([self.binary, "--version"], r"(bombardier version \S+)")

    def argv(self, url, connections, duration_s, keepalive, out):
        args = [
            self.binary,
            "-c",
            str(connections),
            "-d",
            f"{duration_s}s",
            "-l",
            "-k",
            "-p",
            "r",
            "-o",
            "json",
        ]
        if not keepalive:
            # No flag for it, but its fasthttp client honours the header: checked against
            # loadbench-server's accept counter, one connection per response.
            args += ["-H", "Connection: close"]
        return args + [url]

    def parse(self, run, out):
        result = json.loads(run.stdout[run.stdout.index("{") :])["result"]
        non_2xx = sum(result.get(k, 0) for k in ("req1xx", "req3xx", "req4xx", "req5xx"))
        responses = result["req2xx"] + non_2xx
        latency = result.get("latency", {})
        return LoadResult(
            responses=responses,
            non_2xx=non_2xx,
            errors=result.get("others", 0),
            duration_s=result["timeTakenSeconds"],
            latency_us={
                "mean": latency.get("mean"),
                "max": latency.get("max"),
                **{f"p{k}": v for k, v in latency.get("percentiles", {}).items()},
            },
        )


class Oha(Generator):
    # open loop: -q RATE with --latency-correction (latency from the intended send time)
    has_open_loop = True

    def __init__(self) -> None:
        super().__init__("oha", _which("oha"))

    def version(self) -> str:
        return _first_line_version([self.binary, "--version"], r"(oha \S+)")

    def argv(self, url, connections, duration_s, keepalive, out):
        args = [
            self.binary,
            "-z",
            f"{duration_s}s",
            "-c",
            str(connections),
            "--no-tui",
            "--insecure",
            "--output-format",
            "json",
        ]
        if not keepalive:
            args.append("--disable-keepalive")
        if self.rate:
            args += ["-q", f"{self.rate:g}", "--latency-correction"]
        return args + [url]

    def parse(self, run, out):
        data = json.loads(run.stdout[run.stdout.index("{") :])
        statuses = {int(c): int(n) for c, n in data.get("statusCodeDistribution", {}).items()}
        # oha cancels the requests in flight at the deadline and lists them as errors; they are
        # the end of the window, not failures.
        error_kinds = data.get("errorDistribution", {})
        errors = sum(int(n) for kind, n in error_kinds.items() if kind != "aborted due to deadline")
        percentiles = data.get("latencyPercentiles", {})
        return LoadResult(
            responses=sum(statuses.values()),
            non_2xx=sum(n for c, n in statuses.items() if c >= 300),
            errors=errors,
            duration_s=data["summary"]["total"],
            latency_us={k: v * 1e6 for k, v in percentiles.items() if v is not None},
            extra={"error_distribution": error_kinds},
        )


_WRK2_PERCENTILE = re.compile(r"^\s*(\d+\.\d+)%\s+([\d.]+)(us|ms|s|m)\s*$")
_WRK2_REQUESTS = re.compile(r"(\d+) requests in ([\d.]+)(ms|s|m)")
_UNIT_US = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6}


def parse_wrk2(text: str) -> dict:
    """wrk2 --latency output: its recorded (corrected) latency percentiles in us, total requests
    and their span."""
    out: dict = {"percentiles_us": {}}
    in_recorded = False
    for line in text.splitlines():
        if "Latency Distribution" in line:
            in_recorded = "Recorded Latency" in line or "Uncorrected" not in line
            continue
        if "Detailed Percentile spectrum" in line:
            in_recorded = False
        m = _WRK2_PERCENTILE.match(line)
        if m and in_recorded:
            out["percentiles_us"][float(m.group(1))] = float(m.group(2)) * _UNIT_US[m.group(3)]
    m = _WRK2_REQUESTS.search(text)
    if m:
        span = float(m.group(2)) * {"ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(3)]
        out.update(requests=int(m.group(1)), span_s=span)
    p = out["percentiles_us"]
    out.update(p50_us=p.get(50.0), p99_us=p.get(99.0), max_us=p.get(100.0))
    return out


class Wrk2(Generator):
    """wrk2 (giltene/wrk2): wrk with a constant request rate (-R) and latency from each request's
    intended send time; the open-loop part only. In no registry: built from source and named
    with WRK2= (skipped without it). Its first ~10 s calibrate the latency (sent at the rate,
    not recorded), so the run lasts that much longer; its requests and CPU cover all of it."""

    has_open_loop = True
    optional = True
    CALIBRATION_S = 10

    def __init__(self) -> None:
        path = os.environ.get("WRK2")
        super().__init__("wrk2", path if path and os.access(path, os.X_OK) else None)
        if self.binary is None:
            self.missing_reason = "give WRK2=/path/to/wrk2/wrk (giltene/wrk2 built from source)"

    def version(self) -> str:
        return "wrk2 (giltene/wrk2, " + (self.binary or "") + ")"

    def argv(self, url, connections, duration_s, keepalive, out):
        if not self.rate:
            raise UnsupportedMode("open loop only: wrk2 always sends at a rate (-R)")
        if not keepalive:
            raise UnsupportedMode("wrk2 keeps connections open")
        seconds = int(duration_s) + self.CALIBRATION_S
        return [self.binary, "-t1", f"-c{connections}", f"-d{seconds}s", f"-R{self.rate:.0f}",
                "--latency", url]  # fmt: skip

    def parse(self, run, out):
        parsed = parse_wrk2(run.stdout)
        if parsed.get("requests") is None:
            raise RuntimeError(f"wrk2 printed no request count: {run.stdout[-300:]!r}")
        errors = re.search(
            r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", run.stdout
        )
        non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", run.stdout)
        return LoadResult(
            responses=parsed["requests"],
            non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
            errors=sum(int(n) for n in errors.groups()) if errors else 0,
            duration_s=parsed["span_s"],
            latency_us={f"p{k:g}": v for k, v in parsed["percentiles_us"].items()},
        )


class Ab(Generator):
    def __init__(self) -> None:
        super().__init__("ab", _which("ab"))

    def version(self) -> str:
        return _first_line_version([self.binary, "-V"], r"(Version \S+)")

    def argv(self, url, connections, duration_s, keepalive, out):
        args = [self.binary, "-q", "-c", str(connections), "-t", str(duration_s), "-n", "100000000"]
        if keepalive:
            args.append("-k")
        return args + [url]

    def parse(self, run, out):
        text = run.stdout
        complete = _int(r"Complete requests:\s+(\d+)", text)
        return LoadResult(
            responses=complete,
            non_2xx=_int(r"Non-2xx responses:\s+(\d+)", text, 0),
            errors=_int(r"Failed requests:\s+(\d+)", text, 0),
            duration_s=_float(r"Time taken for tests:\s+([\d.]+) seconds", text),
        )


class Loadbench(Generator):
    """`python3 -m loadbench run` from the interpreter that runs the benchmark (its venv)."""

    # open loop: -q RATE over a fixed pool of `connections` (--max-connections C, the sweep's
    # wrk2-style model)
    has_open_loop = True

    def __init__(self) -> None:
        # `python3 -m loadbench run`: this interpreter, when its loadbench has the run command
        binary = (
            sys.executable if importlib.util.find_spec("loadbench.cli.run") is not None else None
        )
        super().__init__("loadbench", binary)
        self.missing_reason = (
            "`loadbench run` is not in the installed loadbench package (pip install .)"
        )

    def version(self) -> str:
        return f"loadbench {build_info()['version']}"

    def argv(self, url, connections, duration_s, keepalive, out):
        args = [
            self.binary,
            "-m",
            "loadbench",
            "run",
            url,
            "-c",
            str(connections),
            "-t",
            "1",
            "-z",
            f"{duration_s}s",
            "--json",
            str(out),
            "--cpus",
            "1",
            "--insecure",
            "--no-progress",
        ]
        if not keepalive:
            args.append("--disable-keepalive")
        if self.rate:
            args += ["-q", f"{self.rate:g}", "--max-connections", str(connections)]
        return args

    def startup_argv(self, url, out):
        return [
            self.binary,
            "-m",
            "loadbench",
            "run",
            url,
            "-c",
            "1",
            "-t",
            "1",
            "-n",
            "1",
            "--json",
            str(out),
            "--cpus",
            "1",
            "--insecure",
            "--no-progress",
        ]

    def parse(self, run, out):
        data = json.loads(out.read_text())
        statuses = {int(c): int(n) for c, n in data["status_codes"].items()}
        generator = data.get("generator", {})
        return LoadResult(
            responses=data["responses"],
            non_2xx=sum(n for c, n in statuses.items() if c >= 300),
            errors=sum(int(n) for n in data.get("errors", {}).values()),
            duration_s=data["duration_s"],
            latency_us=data.get("latency_us", {}),
            connections=data.get("connections_opened"),
            extra={
                "tls_handshakes": data.get("tls_handshakes"),
                "reconnects": data.get("reconnects"),
                "self_cpu_s": generator.get("cpu_s"),
                "self_cpu_us_per_req": generator.get("cpu_us_per_req"),
                "self_saturated": generator.get("saturated"),
                "unfinished": data.get("unfinished"),
                # open loop: due/sends/late_sends and the send lateness percentiles
                "rate": data.get("rate"),
            },
        )


class LoadbenchBuild(Loadbench):
    """The same CLI from another interpreter holding another build of loadbench (e.g. the
    engine from before a redesign), measured side by side with the installed one."""

    def __init__(self, python: str, label: str) -> None:
        Generator.__init__(self, label, python if os.access(python, os.X_OK) else None)
        self.missing_reason = f"{python} is not an executable Python interpreter"

    def version(self) -> str:
        return _first_line_version(
            [
                self.binary,
                "-c",
                "import loadbench, sys; print(loadbench.__version__, 'from', loadbench.__file__)",
            ],
            r"(.+)",
        )


class H2loadH2(Generator):
    """h2load over HTTP/2 (h2c prior knowledge / ALPN h2), `-m streams` per connection."""

    streams = 1

    def __init__(self) -> None:
        super().__init__("h2load", _which("h2load"))

    def version(self) -> str:
        return _first_line_version([self.binary, "--version"], r"(nghttp2/\S+)")

    def argv(self, url, connections, duration_s, keepalive, out):
        if not keepalive:
            raise UnsupportedMode("h2load has no connection-per-request mode")
        return [
            self.binary,
            "-t1",
            f"-c{connections}",
            f"-m{self.streams}",
            "-D",
            str(duration_s),
            url,
        ]

    parse = H2load.parse


class LoadbenchH2(Loadbench):
    """`loadbench run --h2 -p streams`."""

    streams = 1

    def argv(self, url, connections, duration_s, keepalive, out):
        return super().argv(url, connections, duration_s, keepalive, out) + [
            "--h2",
            "-p",
            str(self.streams),
        ]

    def parse(self, run, out):
        result = super().parse(run, out)
        data = json.loads(out.read_text())
        result.extra.update(
            protocol=data.get("config", {}).get("protocol"),
            goaways=data.get("goaways"),
            retried=data.get("retried"),
            streams_reset=data.get("streams_reset"),
        )
        return result


class OhaH2(Oha):
    """oha --http2 -p streams."""

    streams = 1

    def __init__(self) -> None:
        super().__init__()
        self.name = "oha"

    def argv(self, url, connections, duration_s, keepalive, out):
        if not keepalive:
            raise UnsupportedMode("HTTP/2 part: keep-alive only")
        return super().argv(url, connections, duration_s, keepalive, out) + [
            "--http2",
            "-p",
            str(self.streams),
        ]


def h2_generators() -> list[Generator]:
    """The HTTP/2 part's tools (streams set per cell through `.streams`)."""
    return [LoadbenchH2(), H2loadH2(), OhaH2()]


class LoadbenchTls(Loadbench):
    """loadbench with `--tls-library LIBRARY` (https only; opt-in: `--generators loadbench-LIBRARY`)."""

    optional = True

    def __init__(self, library: str) -> None:
        super().__init__()
        self.library = library
        self.name = f"loadbench-{library}"
        if self.binary is not None:
            try:
                check_tls_library(library)
            except ConfigError as exc:
                self.binary = None
                self.missing_reason = str(exc)

    def argv(self, url, connections, duration_s, keepalive, out):
        if not url.startswith("https://"):
            raise UnsupportedMode(f"{self.library}: https only")
        return super().argv(url, connections, duration_s, keepalive, out) + [
            "--tls-library",
            self.library,
        ]

    def startup_argv(self, url, out):
        return super().startup_argv(url, out) + ["--tls-library", self.library]


class LoadbenchLeanTcp(Loadbench):
    """loadbench with `--ack-with-request --rst-close`: the connection-setup part only (both act on
    opening and closing a connection); opt-in: `--generators loadbench-lean-tcp`."""

    optional = True
    OPTIONS = ["--ack-with-request", "--rst-close"]

    def __init__(self) -> None:
        super().__init__()
        self.name = "loadbench-lean-tcp"

    def argv(self, url, connections, duration_s, keepalive, out):
        if keepalive:
            raise UnsupportedMode(
                "connection setup only: its options act on opening and closing connections"
            )
        return super().argv(url, connections, duration_s, keepalive, out) + self.OPTIONS

    def startup_argv(self, url, out):
        return super().startup_argv(url, out) + self.OPTIONS


class LoadbenchOpenLoopVariant(Loadbench):
    """loadbench's open loop with `options` (the open-loop part only; opt-in by its name,
    `loadbench-SUFFIX`), measured beside the default: `--send-batch 1ms` sends the requests due
    within a millisecond in one wake-up (oha's timer granularity), trading measured lateness for
    generator CPU; `--no-batch-reads` wakes the loop for every response, as before issue 45."""

    optional = True

    def __init__(self, suffix: str, options: list[str], what: str) -> None:
        super().__init__()
        self.name = f"loadbench-{suffix}"
        self.options = options
        self.what = what

    def argv(self, url, connections, duration_s, keepalive, out):
        if not self.rate:
            raise UnsupportedMode(f"open loop only: {self.what}")
        return super().argv(url, connections, duration_s, keepalive, out) + self.options


def send_batch(span: str) -> LoadbenchOpenLoopVariant:
    """`--send-batch SPAN` (e.g. 1ms: oha's and wrk2's timer step; 100us: the tick issue 45
    proposes as a default)."""
    return LoadbenchOpenLoopVariant(
        f"send-batch-{span}", ["--send-batch", span], "it changes when due requests are sent"
    )


def no_batch_reads() -> LoadbenchOpenLoopVariant:
    return LoadbenchOpenLoopVariant(
        "no-batch-reads", ["--no-batch-reads"], "it changes when responses are read"
    )


def all_generators() -> list[Generator]:
    return [
        Loadbench(),
        Wrk(),
        H2load(),
        Hey(),
        Bombardier(),
        Oha(),
        Ab(),
        LoadbenchTls("wolfssl"),
        LoadbenchTls("rustls"),
        LoadbenchLeanTcp(),
        send_batch("1ms"),
        send_batch("100us"),
        no_batch_reads(),
        Wrk2(),
    ]
