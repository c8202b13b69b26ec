"""Where a server allocates, not just how often: heaptrack attached for one short window.

The allocation counter (loadbench.core.allocations) says how many allocations a request costs;
heaptrack (Debian's 1.4) records a stack per allocation and says where - at a large cost, so it
is opt-in (`allocation_sites = true` in a sweep, `--allocation-sites`) and never in a window
whose speed is reported:

    sites = SiteRecorder(out_dir)
    sites.attach(pids)                  # heaptrack -p PID for each live process of the tree
    ... one short run ...
    (stop the server: heaptrack writes its data when the process exits)
    top = sites.finish(responses)       # [{function, location, calls, bytes, per request}]

Attaching (gdb injects heaptrack's library) starts recording after the server's start-up, so
the figures cover the run's connection setup and its requests. heaptrack's data file is read
directly (its text format: strings, instruction pointers, traces, allocation infos, + / -
events), because heaptrack_print reports a site's calls and peak but not the bytes it asked for.
A site is the first frame above the allocator (operator new and the C allocator's own frames are
skipped), named by function (demangled with c++filt when present) and file:line where the
binary has debug information, else its module.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Optional

from .errors import ConfigError, ServerError

ATTACH_TIMEOUT_S = 60.0
FINISH_TIMEOUT_S = 120.0
# Frames that are the allocator itself, not the code that asked for memory.
_ALLOCATOR_FRAMES = (
    "operator new",
    "_Znwm",
    "_Znam",
    "_ZnwmRKSt9nothrow_t",
    "malloc",
    "calloc",
    "realloc",
    "__libc_",
    "__GI___libc_",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "heaptrack",
    # CPython's allocator layers: the site is the code that asked them
    "_PyObject_Malloc",
    "_PyObject_Calloc",
    "_PyObject_Realloc",
    "PyObject_Malloc",
    "PyObject_Calloc",
    "PyObject_Realloc",
    "_PyMem_",
    "PyMem_",
)


def heaptrack_missing() -> Optional[str]:
    """Why allocation sites cannot be recorded here, or None."""
    for tool in ("heaptrack", "zstd", "gdb"):
        if shutil.which(tool) is None:
            return f"--allocation-sites needs {tool} (Debian: apt-get install heaptrack gdb zstd)"
    return None


class SiteRecorder:
    """heaptrack attached to a server's processes for one window; see the module docstring."""

    def __init__(self, out_dir: os.PathLike | str) -> None:
        missing = heaptrack_missing()
        if missing:
            raise ConfigError(missing)
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._tracers: list[tuple[int, subprocess.Popen, Path]] = []

    def attach(self, pids: Iterable[int]) -> None:
        """Attach to each pid and wait until every injection finished (ServerError naming the
        pid and heaptrack's words when one fails)."""
        for pid in pids:
            prefix = self.out_dir / f"heaptrack.{pid}"
            proc = subprocess.Popen(
                ["heaptrack", "-o", str(prefix), "-p", str(pid)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
            self._tracers.append((pid, proc, prefix.with_suffix(prefix.suffix + ".zst")))
            said = []
            deadline = time.monotonic() + ATTACH_TIMEOUT_S
            while time.monotonic() < deadline:
                line = proc.stdout.readline() if proc.stdout else ""
                if not line:
                    break
                said.append(line.strip())
                if "injection finished" in line:
                    break
            if not said or "injection finished" not in said[-1]:
                self.abandon()
                tail = " / ".join(x for x in said[-4:] if x) or "no output"
                raise ServerError(f"heaptrack could not attach to pid {pid}: {tail}")
            if not _recording(proc.pid):
                # gdb called heaptrack_inject, but the library never opened heaptrack's pipe (a
                # runtime whose threads gdb cannot call into, e.g. node, Go): the reader would
                # wait on the pipe for ever
                self.abandon()
                raise ServerError(
                    f"heaptrack was injected into pid {pid} but never started recording "
                    "(its runtime did not run heaptrack's start-up)"
                )

    def abandon(self) -> None:
        """Stop every heaptrack started here (an attach failed, or the run was interrupted)."""
        for _, proc, _ in self._tracers:
            # heaptrack is a script with a reader and a compressor beside it (its process group,
            # start_new_session): SIGINT lets its cleanup detach, then SIGKILL takes what is left
            # (its background jobs ignore SIGINT, and one blocked on the pipe would stay for ever)
            for sig in (signal.SIGINT, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.unlink(f"/tmp/heaptrack_fifo{proc.pid}")  # the script's own, left by SIGKILL
            except OSError:
                pass
            if proc.poll() is None:
                proc.wait()
        self._tracers = []

    def finish(self, responses: int, top: int = 25) -> dict:
        """After the server exited: wait for heaptrack to write, read every data file and
        return {responses, processes, calls, bytes, sites: [...]} (sites by calls, largest first)."""
        calls: dict = defaultdict(int)
        nbytes: dict = defaultdict(int)
        files = 0
        for _, proc, path in self._tracers:
            try:
                proc.wait(timeout=FINISH_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.abandon()
                raise ServerError(
                    f"heaptrack did not finish writing {path} within {FINISH_TIMEOUT_S:g} s"
                ) from None
            if path.is_file() and path.stat().st_size:
                files += 1
                for site, (c, b) in read_heaptrack(path).items():
                    calls[site] += c
                    nbytes[site] += b
        self._tracers = []
        names = _demangle([site[0] for site in calls])
        ranked = sorted(calls, key=lambda s: -calls[s])[:top]
        return {
            "responses": responses,
            "processes": files,
            "calls": sum(calls.values()),
            "bytes": sum(nbytes.values()),
            "sites": [
                {
                    "function": names.get(site[0], site[0]),
                    "location": site[1],
                    "calls": calls[site],
                    "bytes": nbytes[site],
                    "calls_per_req": calls[site] / responses if responses else None,
                    "bytes_per_req": nbytes[site] / responses if responses else None,
                }
                for site in ranked
            ],
        }


def _recording(group: int, wait_s: float = 5.0) -> bool:
    """Whether heaptrack's reader (heaptrack_interpret) runs in the tracer's process group: it
    starts only once the injected library opened heaptrack's pipe."""
    deadline = time.monotonic() + wait_s
    while True:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                    stat = fh.read()
            except OSError:
                continue
            comm = stat[stat.find("(") + 1 : stat.rfind(")")]
            fields = stat[stat.rfind(")") + 2 :].split()
            if comm.startswith("heaptrack_inter") and len(fields) > 2 and int(fields[2]) == group:
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def read_heaptrack(path: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """(function, location) -> (allocation calls, bytes) from one heaptrack data file."""
    text = subprocess.run(
        ["zstd", "-dc", str(path)], capture_output=True, check=True
    ).stdout.decode(errors="replace")
    strings = [""]  # 1-based
    ips: list = [None]  # 1-based: (module, [(function, file, line), ...])
    traces: list = [(0, 0)]  # 1-based: (ip index, parent trace index)
    infos: list = []  # 0-based: (size, trace index)
    per_info: dict = defaultdict(int)
    for line in text.splitlines():
        if not line:
            continue
        kind, rest = line[0], line[2:]
        if kind == "+":
            per_info[int(rest, 16)] += 1
        elif kind == "s":
            strings.append(rest.split(" ", 1)[1] if " " in rest else "")
        elif kind == "i":
            fields = [int(x, 16) for x in rest.split()]
            frames = [tuple(fields[i : i + 3]) for i in range(2, len(fields) - 2, 3)]
            if len(fields) >= 3 and not frames:  # a function without file/line
                frames = [(fields[2], 0, 0)]
            ips.append((fields[1], frames))
        elif kind == "t":
            ip, parent = (int(x, 16) for x in rest.split()[:2])
            traces.append((ip, parent))
        elif kind == "a":
            size, trace = (int(x, 16) for x in rest.split()[:2])
            infos.append((size, trace))

    def name(index: int) -> str:
        return strings[index] if 0 < index < len(strings) else ""

    def site_of(trace: int) -> tuple[str, str]:
        first: Optional[tuple[str, str]] = None
        seen = 0
        while trace and seen < 64:
            ip, parent = traces[trace]
            module, frames = ips[ip]
            function, file, line = frames[0] if frames else (0, 0, 0)
            fn = name(function)
            where = f"{name(file)}:{line}" if file else os.path.basename(name(module))
            label = (fn or f"?? in {os.path.basename(name(module))}", where)
            if first is None:
                first = label
            if not fn.startswith(_ALLOCATOR_FRAMES):
                return label
            trace, seen = parent, seen + 1
        return first or ("??", "")

    out: dict = defaultdict(lambda: [0, 0])
    for index, count in per_info.items():
        size, trace = infos[index]
        site = site_of(trace)
        out[site][0] += count
        out[site][1] += count * size
    return {site: (c, b) for site, (c, b) in out.items()}


_RUST_ESCAPES = {
    "$LT$": "<",
    "$GT$": ">",
    "$u7b$": "{",
    "$u7d$": "}",
    "$u20$": " ",
    "$u27$": "'",
    "$RF$": "&",
    "$BP$": "*",
    "$C$": ",",
}
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")


def tidy_name(name: str) -> str:
    """A Rust legacy symbol as heaptrack leaves it (``HeaderMap$LT$T$GT$::try_reserve_one::h1a2b...``)
    written as Rust reads it (``HeaderMap<T>::try_reserve_one``); other names unchanged."""
    if "$" not in name and not _RUST_HASH.search(name):
        return name
    for escaped, plain in _RUST_ESCAPES.items():
        name = name.replace(escaped, plain)
    name = _RUST_HASH.sub("", name.replace("..", "::"))
    return name[1:] if name.startswith("_<") else name  # an impl's symbol: `<T as Trait>::f`


def _demangle(names: list[str]) -> dict[str, str]:
    """Mangled C++ names -> readable ones (c++filt, when installed), Rust's tidied."""
    out = {n: tidy_name(n) for n in names if tidy_name(n) != n}
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled or shutil.which("c++filt") is None:
        return out
    done = subprocess.run(
        ["c++filt"], input="\n".join(mangled), capture_output=True, text=True
    ).stdout.splitlines()
    if len(done) == len(mangled):
        out.update({n: tidy_name(d) for n, d in zip(mangled, done)})
    return out
