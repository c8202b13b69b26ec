"""Where a server's CPU goes: `perf record` on its process tree for exactly one window.

    profiler = Profiler(out_dir)            # ConfigError when perf is missing
    profiler.attach(pids)                   # perf attached, events off (warm-up not sampled)
    profiler.enable(); ... ; profiler.disable()   # at the window's edges
    block = profiler.finish(cpu_us_per_req) # folded stacks, flame graph SVG, top functions

perf (Debian's linux-perf) is started before the run with its events disabled (`-D -1`) and
switched on and off through its control FIFO (`--control`), each command acknowledged: the
samples cover the measured window and nothing before it, without perf's own start-up (it reads
/proc and opens an event per thread: tenths of a second) falling into the window. Threads and
processes the tree creates after the attach are followed (perf's events are inherited).
Samples carry CLOCK_MONOTONIC times (`-k monotonic`), the clock the engine and the window's
edges use, so the block says when the first and the last sample fell.

What the block holds: `samples`, `frequency_hz`, `call_graph`, `event`, the folded stacks
(``perf.folded``: "comm;root;...;leaf count" per line, Brendan Gregg's format, written by
:func:`fold`), the flame graph (``flamegraph.svg``, :mod:`loadbench.core.flamegraph`), the top
functions (``top.md`` and `top`: self share = samples with the function as the leaf, inclusive
share = samples with it anywhere on the stack; CPU us per request = share x the window's server
cpu_us_per_req), and `unknown_share`: the samples whose leaf has no symbol, with a `hint`.

A profiled window is slower than a plain one (perf interrupts the server ~1000 times a second
per busy thread and walks its stack): its figures are never reported as the server's speed.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from .errors import ConfigError, LoadbenchError, ServerError
from .flamegraph import write_flamegraph
from .sampler import WindowEdges

# 999 Hz, not 1000: a rate that is not a multiple of the kernel's timer tick does not sample in
# lockstep with periodic work (Brendan Gregg's advice; perf's default is 4000, which costs a busy
# server more and adds nothing a 10 s window needs: ~10 000 samples per busy core).
DEFAULT_FREQUENCY_HZ = 999
# Frame pointers ("fp", perf -g) by default: the kernel walks the user stack through the frame
# pointer chain at each sample - cheap, small perf.data, a fast `perf script`. Self shares (the
# top table) are right whatever the unwinding, as the leaf is the sampled instruction; only the
# callers above code built without frame pointers are lost (short or broken towers in the flame
# graph, wrong inclusive shares) - and, even in code built with -fno-omit-frame-pointer, the
# caller of a sampled leaf function, where gcc sets up no frame. "dwarf" copies 16 KiB of stack per sample and unwinds it
# afterwards from .eh_frame: deep stacks through such code, at ~16 MB/s of perf.data per busy
# core and minutes of `perf script` - the option for when the towers are broken.
CALL_GRAPHS = {"fp": ["-g"], "dwarf": ["--call-graph", "dwarf,16384"]}
DEFAULT_CALL_GRAPH = "fp"
TOP = 25
ATTACH_TIMEOUT_S = 30.0
COMMAND_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 120.0
SCRIPT_TIMEOUT_S = 600.0
UNKNOWN = "[unknown]"
FOLDED_FILE = "perf.folded"
SVG_FILE = "flamegraph.svg"
TOP_FILE = "top.md"
DATA_FILE = "perf.data"
HINT = (
    "samples without a symbol: run a binary that keeps its symbol table (not stripped; "
    "loadbench's wheel keeps its own), and for whole stacks build with "
    "-fno-omit-frame-pointer or profile with call_graph='dwarf' (--profile-call-graph dwarf)"
)


def perf_path() -> Optional[str]:
    """The perf to run: $LOADBENCH_PERF when set (a path), else perf on PATH."""
    given = os.environ.get("LOADBENCH_PERF")
    if given:
        return given if os.access(given, os.X_OK) and os.path.isfile(given) else None
    return shutil.which("perf")


def perf_missing() -> Optional[str]:
    """Why perf cannot be run here (one line), or None. Whether the kernel lets it sample is
    known only when it attaches (Profiler.attach says so)."""
    if perf_path() is None:
        where = os.environ.get("LOADBENCH_PERF")
        if where:
            return f"--profile: LOADBENCH_PERF={where} is not an executable file"
        return "--profile needs perf (Debian: apt-get install linux-perf)"
    return None


def check_profile_settings(frequency_hz: int, call_graph: str) -> None:
    """ConfigError naming the bad one."""
    if call_graph not in CALL_GRAPHS:
        raise ConfigError(
            f"profile call graph {call_graph!r} is not one of {', '.join(CALL_GRAPHS)}"
        )
    if isinstance(frequency_hz, bool) or not isinstance(frequency_hz, int):
        raise ConfigError(f"profile frequency {frequency_hz!r} is not a whole number of Hz")
    if not 1 <= frequency_hz <= 100_000:
        raise ConfigError(f"profile frequency {frequency_hz} Hz is not within 1-100000")


@dataclass
class Frame:
    symbol: str  # UNKNOWN when perf could not name it
    dso: str  # the shared object's path, "[kernel.kallsyms]", or UNKNOWN

    @property
    def named(self) -> bool:
        return self.symbol != UNKNOWN and not self.symbol.startswith("0x")

    @property
    def module(self) -> str:
        return os.path.basename(self.dso) if self.dso.startswith("/") else self.dso

    def label(self) -> str:
        """The frame in the folded stacks: the symbol, or "[unknown] (module)" so that a frame
        without a symbol still says which binary lacks one."""
        if self.named:
            return self.symbol.replace(";", ":")
        return f"{UNKNOWN} ({self.module})" if self.dso != UNKNOWN else UNKNOWN


@dataclass
class Sample:
    comm: str
    pid: int
    time_s: float  # CLOCK_MONOTONIC with -k monotonic
    event: str
    frames: list = field(default_factory=list)  # leaf first, as perf script prints them


def _split_dso(text: str) -> tuple[str, str]:
    """'sym (dso)' -> (sym, dso), the dso being the last balanced parenthesised group (a symbol
    may hold parentheses - C++ argument lists - and a dso too: "/x (deleted)")."""
    text = text.rstrip()
    if not text.endswith(")"):
        return text, UNKNOWN
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                return text[:i].rstrip(), text[i + 1 : -1]
    return text, UNKNOWN


def parse_script(text: str) -> list[Sample]:
    """`perf script -F comm,pid,tid,time,event,ip,sym,dso` output -> samples. A sample is a
    header line ("comm pid/tid time: event:") and its call chain, one frame per indented line
    ("ip symbol (dso)", leaf first), then a blank line."""
    samples: list[Sample] = []
    current: Optional[Sample] = None
    for line in text.splitlines():
        if not line.strip():
            current = None
            continue
        if line[0] in " \t":
            if current is None:
                continue
            parts = line.strip().split(None, 1)
            symbol, dso = _split_dso(parts[1] if len(parts) > 1 else UNKNOWN)
            current.frames.append(Frame(symbol or UNKNOWN, dso or UNKNOWN))
            continue
        current = _header(line)
        if current is not None:
            samples.append(current)
    return samples


def _header(line: str) -> Optional[Sample]:
    # "comm 123/124 456.789012: cpu-clock:pppH:" - comm may hold spaces, so read from the right
    head, sep, event_part = line.partition(": ")
    if not sep:
        return None
    fields = head.rsplit(None, 2)
    if len(fields) < 3 or "/" not in fields[1]:
        return None
    comm, ids, stamp = fields
    try:
        pid = int(ids.split("/")[0])
        time_s = float(stamp.rstrip(":"))
    except ValueError:
        return None
    event = event_part.strip().split()[-1].rstrip(":") if event_part.strip() else ""
    return Sample(comm, pid, time_s, event)


def fold(samples: Iterable[Sample]) -> dict[str, int]:
    """Folded stacks: "comm;root;...;leaf" -> samples (the process name as the root frame, so
    a tree's processes stay apart), sorted by stack as stackcollapse-perf writes them."""
    counts: Counter = Counter()
    for s in samples:
        frames = [f.label() for f in reversed(s.frames)] or [UNKNOWN]
        counts[";".join([s.comm.replace(";", ":") or "?"] + frames)] += 1
    return dict(sorted(counts.items()))


def write_folded(folded: dict[str, int], path: Path) -> None:
    path.write_text("".join(f"{stack} {count}\n" for stack, count in folded.items()))


def read_folded(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path(path).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            out[stack] = out.get(stack, 0) + int(count)
    return out


def top_functions(
    samples: list[Sample], cpu_us_per_req: Optional[float] = None, n: int = TOP
) -> list[dict]:
    """The n functions with the largest self share: {function, module, self_samples,
    self_share, inclusive_samples, inclusive_share, self_us_per_req, inclusive_us_per_req}.
    A function is a (symbol, module) pair; one without a symbol is "[unknown]" per module.
    Inclusive counts a sample once however often the function recurs on its stack."""
    total = len(samples)
    own: Counter = Counter()
    anywhere: Counter = Counter()
    for s in samples:
        if not s.frames:
            own[(UNKNOWN, UNKNOWN)] += 1
            anywhere[(UNKNOWN, UNKNOWN)] += 1
            continue
        leaf = s.frames[0]
        own[(leaf.symbol if leaf.named else UNKNOWN, leaf.module)] += 1
        for key in {(f.symbol if f.named else UNKNOWN, f.module) for f in s.frames}:
            anywhere[key] += 1
    ranked = sorted(own, key=lambda k: (-own[k], k))[:n]
    out = []
    for key in ranked:
        self_share = own[key] / total
        inclusive_share = anywhere[key] / total
        out.append(
            {
                "function": key[0],
                "module": key[1],
                "self_samples": own[key],
                "self_share": round(self_share, 6),
                "inclusive_samples": anywhere[key],
                "inclusive_share": round(inclusive_share, 6),
                "self_us_per_req": _us(self_share, cpu_us_per_req),
                "inclusive_us_per_req": _us(inclusive_share, cpu_us_per_req),
            }
        )
    return out


def _us(share: float, cpu_us_per_req: Optional[float]) -> Optional[float]:
    return None if cpu_us_per_req is None else round(share * cpu_us_per_req, 4)


def unknown_leaves(samples: list[Sample]) -> tuple[float, list[str]]:
    """(share of samples whose leaf has no symbol, the modules those leaves are in, most first)."""
    if not samples:
        return 0.0, []
    modules: Counter = Counter()
    for s in samples:
        if not s.frames or not s.frames[0].named:
            modules[s.frames[0].module if s.frames else UNKNOWN] += 1
    return sum(modules.values()) / len(samples), [m for m, _ in modules.most_common(5)]


def top_table(top: list[dict], limit: int = TOP) -> str:
    """The top functions as a markdown table (top.md beside the flame graph)."""
    lines = [
        "| # | function | module | self | inclusive | self CPU us/req | inclusive CPU us/req |",
        "|---:|---|---|---:|---:|---:|---:|",
    ]
    for i, t in enumerate(top[:limit], 1):
        us = [
            "n/a" if t[k] is None else f"{t[k]:.3f}"
            for k in ("self_us_per_req", "inclusive_us_per_req")
        ]
        lines.append(
            f"| {i} | `{t['function']}` | {t['module']} | {100 * t['self_share']:.1f} % "
            f"| {100 * t['inclusive_share']:.1f} % | {us[0]} | {us[1]} |"
        )
    return "\n".join(lines) + "\n"


def _event_note(samples: list[Sample]) -> Optional[str]:
    """What a timer-based event means for the shares: said where perf had no hardware counter
    (a VM), as bench/perf_profiles.py found on this project's machines."""
    if not samples or not samples[0].event.startswith("cpu-clock"):
        return None
    return (
        "cpu-clock, a timer (no hardware counters here, e.g. a VM): a sample that falls while the "
        "kernel runs with interrupts off is credited to where it turns them back on "
        "(finish_task_switch, _raw_spin_unlock_irqrestore), standing for kernel work before them"
    )


def _comm(pid: int) -> Optional[str]:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


class Profiler:
    """perf record attached to a server's processes for one window; see the module docstring.
    ``keep_data``: leave perf.data in ``out_dir`` (for `perf report`); a sweep drops it."""

    def __init__(
        self,
        out_dir: os.PathLike | str,
        frequency_hz: int = DEFAULT_FREQUENCY_HZ,
        call_graph: str = DEFAULT_CALL_GRAPH,
        keep_data: bool = True,
    ) -> None:
        check_profile_settings(frequency_hz, call_graph)
        missing = perf_missing()
        if missing:
            raise ConfigError(missing)
        self.perf = perf_path() or "perf"
        self.out_dir = Path(out_dir)
        self.frequency_hz = frequency_hz
        self.call_graph = call_graph
        self.keep_data = keep_data
        self.proc: Optional[subprocess.Popen] = None
        self.pids: list[int] = []
        self.names: dict[int, Optional[str]] = {}  # pid -> its process name (/proc/PID/comm)
        self.enabled_at: Optional[float] = None
        self.disabled_at: Optional[float] = None
        self._ctl: Optional[int] = None
        self._ack: Optional[int] = None

    @property
    def data(self) -> Path:
        return self.out_dir / DATA_FILE

    def attach(self, pids: Iterable[int]) -> None:
        """Start perf on ``pids`` with its events off and wait until it is ready (ServerError
        with perf's own words when it exits instead: refused by perf_event_paranoid, a pid gone)."""
        self.pids = sorted(set(pids))
        if not self.pids:
            raise ServerError("--profile: the sampled server has no processes to profile")
        self.names = {pid: _comm(pid) for pid in self.pids}
        self.out_dir.mkdir(parents=True, exist_ok=True)
        ctl, ack = self.out_dir / ".perf-ctl", self.out_dir / ".perf-ack"
        for fifo in (ctl, ack):
            if fifo.exists():
                fifo.unlink()
            os.mkfifo(fifo)
        self._log = self.out_dir / ".perf-record.log"
        argv = [
            self.perf,
            "record",
            "-F",
            str(self.frequency_hz),
            *CALL_GRAPHS[self.call_graph],
            "-k",
            "monotonic",
            "-D",
            "-1",
            "--control",
            f"fifo:{ctl},{ack}",
            "-p",
            ",".join(map(str, self.pids)),
            "-o",
            str(self.data),
        ]
        with open(self._log, "w") as log:
            # its own session: a Ctrl-C meant for the run does not stop perf before it wrote
            self.proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while "Events disabled" not in self._said():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.abandon()
                raise ServerError(f"perf record could not attach: {self._said_tail()}")
            time.sleep(0.02)
        # perf opened both FIFOs before it said so: these opens do not block
        self._ctl = os.open(ctl, os.O_WRONLY)
        self._ack = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)

    def _said(self) -> str:
        try:
            return self._log.read_text(errors="replace")
        except OSError:
            return ""

    def _said_tail(self) -> str:
        lines = [x.strip() for x in self._said().splitlines() if x.strip()]
        return " / ".join(lines[-3:]) or "no output"

    def _command(self, word: str) -> float:
        """Send enable/disable and wait for perf's ack; the monotonic time it was acknowledged."""
        if self._ctl is None or self._ack is None:
            raise ServerError("perf record is not attached")
        os.write(self._ctl, f"{word}\n".encode())
        deadline = time.monotonic() + COMMAND_TIMEOUT_S
        got = b""
        while b"ack" not in got:
            left = deadline - time.monotonic()
            if left <= 0 or (self.proc is not None and self.proc.poll() is not None):
                raise ServerError(f"perf record did not acknowledge {word}: {self._said_tail()}")
            ready, _, _ = select.select([self._ack], [], [], left)
            if ready:
                got += os.read(self._ack, 64)
        return time.monotonic()

    def enable(self) -> None:
        if self.enabled_at is None:
            self.enabled_at = self._command("enable")

    def disable(self) -> None:
        if self.enabled_at is not None and self.disabled_at is None:
            self.disabled_at = self._command("disable")

    def stop(self) -> None:
        """Events off, perf asked to write its data (SIGINT) and waited for."""
        try:
            self.disable()
        except ServerError:
            pass  # perf is gone or stuck: the wait below says so
        for fd in (self._ctl, self._ack):
            if fd is not None:
                os.close(fd)
        self._ctl = self._ack = None
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.abandon()
            raise ServerError(
                f"perf record did not finish writing within {STOP_TIMEOUT_S:g} s"
            ) from None
        self._cleanup_fifos()

    def abandon(self) -> None:
        """Kill perf (an attach failed, or the run was interrupted) and leave no FIFOs behind."""
        for fd in (self._ctl, self._ack):
            if fd is not None:
                os.close(fd)
        self._ctl = self._ack = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._cleanup_fifos()

    def _cleanup_fifos(self) -> None:
        for name in (".perf-ctl", ".perf-ack"):
            try:
                (self.out_dir / name).unlink()
            except OSError:
                pass

    def script(self) -> str:
        proc = subprocess.run(
            [
                self.perf,
                "script",
                "-i",
                str(self.data),
                "-F",
                "comm,pid,tid,time,event,ip,sym,dso",
            ],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=SCRIPT_TIMEOUT_S,
        )
        if proc.returncode != 0:
            raise ServerError(f"perf script exited {proc.returncode}: {proc.stderr[-300:]}")
        return proc.stdout

    def finish(
        self, cpu_us_per_req: Optional[float] = None, window_opens_at: Optional[float] = None
    ) -> dict:
        """Stop perf, read its samples and write perf.folded, flamegraph.svg and top.md: the
        result's `profile` block (see the module docstring)."""
        self.stop()
        if not self.data.is_file():
            raise ServerError(f"perf record wrote no {self.data}: {self._said_tail()}")
        samples = parse_script(self.script())
        self._name_threads(samples)
        if not self.keep_data:
            self.data.unlink()
        try:
            self._log.unlink()
        except OSError:
            pass
        return self.block(samples, cpu_us_per_req, window_opens_at)

    def _name_threads(self, samples: list[Sample]) -> None:
        """perf names a thread it saw no task event for ":TID" (one the server started while
        the events were off, in the warm-up): such a sample takes its process's name, read when
        perf attached (or now, for a process forked since)."""
        for s in samples:
            if s.comm.startswith(":"):
                if s.pid not in self.names:
                    self.names[s.pid] = _comm(s.pid)
                s.comm = self.names[s.pid] or s.comm

    def block(
        self,
        samples: list[Sample],
        cpu_us_per_req: Optional[float],
        window_opens_at: Optional[float] = None,
    ) -> dict:
        folded = fold(samples)
        folded_path = self.out_dir / FOLDED_FILE
        svg_path = self.out_dir / SVG_FILE
        top_path = self.out_dir / TOP_FILE
        write_folded(folded, folded_path)
        unknown_share, unknown_modules = unknown_leaves(samples)
        top = top_functions(samples, cpu_us_per_req)
        write_flamegraph(
            folded,
            svg_path,
            title=f"CPU flame graph: {len(samples):,} samples at {self.frequency_hz} Hz, "
            f"call graph {self.call_graph}",
        )
        top_path.write_text(top_table(top))
        times = [s.time_s for s in samples]
        return {
            "dir": str(self.out_dir),
            "folded": str(folded_path),
            "svg": str(svg_path),
            "top_table": str(top_path),
            "perf_data": str(self.data) if self.keep_data else None,
            "samples": len(samples),
            "frequency_hz": self.frequency_hz,
            "call_graph": self.call_graph,
            "event": Counter(s.event for s in samples).most_common(1)[0][0] if samples else None,
            "pids": self.pids,
            "cpu_us_per_req": cpu_us_per_req,
            "unknown_share": round(unknown_share, 6),
            "unknown_modules": unknown_modules,
            "hint": HINT if unknown_share >= 0.05 else None,
            "event_note": _event_note(samples),
            # CLOCK_MONOTONIC seconds (time.monotonic(), the engine's clock): when the window
            # opened, when perf acknowledged enable and disable, and the first and last sample
            "clock": {
                "window_opens_at": window_opens_at,
                "enabled_at": self.enabled_at,
                "disabled_at": self.disabled_at,
                "first_sample_at": min(times) if times else None,
                "last_sample_at": max(times) if times else None,
            },
            "top": top,
        }


class ProfiledWindow:
    """A run's profiler, if it asked for one: attached before the run, switched on and off
    with the window's edges. A failing perf (missing, refused, stuck) leaves an error for the
    result's `profile` block and never ends the run."""

    def __init__(self, out_dir: Any, frequency: int, call_graph: str, keep_data: bool) -> None:
        self.profiler: Optional[Profiler] = None
        self.error: Optional[str] = None
        if out_dir is None:
            return
        check_profile_settings(frequency, call_graph)  # a bad setting fails before the run
        self.error = perf_missing()
        if self.error is None:
            self.profiler = Profiler(out_dir, frequency, call_graph, keep_data)

    def attach(self, edges: WindowEdges) -> None:
        if self.profiler is None:
            return
        try:
            self.profiler.attach(edges.sampler.snapshot().pids)
        except LoadbenchError as exc:
            self.error, self.profiler = str(exc), None
            return
        edges.on_open = lambda: self._safely(self.profiler.enable if self.profiler else None)
        edges.on_close = lambda: self._safely(self.profiler.disable if self.profiler else None)

    def _safely(self, step: Optional[Callable[[], None]]) -> None:
        if step is None:
            return
        try:
            step()
        except LoadbenchError as exc:
            self.error = str(exc)
            self.abandon()

    def abandon(self) -> None:
        if self.profiler is not None:
            self.profiler.abandon()
            self.profiler = None

    def finish(self, cpu_us_per_req: Optional[float], opens_at: Optional[float]) -> dict:
        if self.profiler is None:
            return {"error": self.error or "the profiler did not run"}
        try:
            return self.profiler.finish(cpu_us_per_req, opens_at)
        except LoadbenchError as exc:
            self.abandon()
            return {"error": str(exc)}
