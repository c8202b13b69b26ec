"""Heap allocations per request: the allocation counter for the servers loadbench starts.

Opt-in (``ServerProcess(allocations=True)``, ``loadbench serve --allocations``, a sweep's
``allocations = true``): the server starts with ``libloadbench_alloc.so`` in LD_PRELOAD and
``LOADBENCH_ALLOC_DIR`` naming a directory made for it. Every process of its tree (forks and
exec'd children inherit both) counts its malloc/calloc/realloc/free/memalign-family calls - and
so operator new/delete - per thread into a 4 KiB shared-memory page of its own in that directory
(cpp/preload/allocation_counter.cpp). The sampler sums the pages at each edge of a window,
right after the CPU (``ProcSnapshot.allocations``), so a window's allocations and its CPU cover
the same span:

    counter = AllocationCounter.create("beast")
    Popen(argv, env=counter.environment(os.environ))
    Sampler(pid)          # finds the counter from the process's environment ("auto")
    ...
    counter.remove()

A sampler in another process finds it too (``loadbench serve --allocations`` + ``run
--sample-pid``): :func:`allocation_dir_of` reads the directory from /proc/PID/environ.

What the figure covers: libc's allocator, as called. A statically linked executable (Go) does
not load the library; a runtime with its own heap (V8, pymalloc for small objects, a bundled
jemalloc/mimalloc) is undercounted or invisible. :func:`window_allocations` marks what it can
detect "n/a" with the reason instead of printing 0: a live process of the tree without a page
(the library was not loaded there), or no call at all while serving (from the run's start, its
connections' setup included, to the window's end).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from .errors import ConfigError

DIR_VARIABLE = "LOADBENCH_ALLOC_DIR"  # the page directory (cpp/core/sampler/allocation_page.hpp)
LIBRARY_NAME = "libloadbench_alloc.so"
_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # python/loadbench: lib/ beside core/


def library_path() -> Path:
    """The installed interposer library; ConfigError when this installation has none."""
    candidate = _PACKAGE_DIR / "lib" / LIBRARY_NAME
    if not candidate.is_file():
        raise ConfigError(
            f"allocation counting needs {candidate}, which this installation lacks; "
            "reinstall with `pip install .`"
        )
    return candidate


def _page_root() -> str:
    # tmpfs: the pages are shared memory; /dev/shm where it exists, else the temp directory
    return (
        "/dev/shm"
        if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)
        else tempfile.gettempdir()
    )


@dataclass
class AllocationCounter:
    """The page directory of one server's tree; see the module docstring."""

    directory: str
    library: str

    @classmethod
    def create(cls, label: str = "server") -> "AllocationCounter":
        library = str(library_path())
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:40]
        directory = tempfile.mkdtemp(prefix=f"loadbench-alloc-{safe}-", dir=_page_root())
        return cls(directory, library)

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with the counter preloaded (ahead of any LD_PRELOAD already there)."""
        env = dict(base)
        preload = env.get("LD_PRELOAD", "").strip()
        env["LD_PRELOAD"] = f"{self.library} {preload}".strip()
        env[DIR_VARIABLE] = self.directory
        return env

    def remove(self) -> None:
        """Deletes the pages (after the server stopped: a page still mapped is freed with it)."""
        try:
            for name in os.listdir(self.directory):
                try:
                    os.unlink(os.path.join(self.directory, name))
                except OSError:
                    pass
            os.rmdir(self.directory)
        except OSError:
            pass


def allocation_dir_of(pid: int) -> Optional[str]:
    """The counter's directory of a process started with it, from its environment; None when
    it has none (or its environment is unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    env = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    directory = env.get(DIR_VARIABLE.encode())
    preload = env.get(b"LD_PRELOAD", b"")
    if not directory or LIBRARY_NAME.encode() not in preload:
        return None
    path = directory.decode(errors="replace")
    return path if os.path.isdir(path) else None


def window_allocations(
    start: dict,
    end: dict,
    responses: int,
    live: Mapping[int, str],
    run_start: Optional[dict] = None,
    connections: int = 0,
) -> dict[str, Any]:
    """The ``server.allocations`` block of a window from the counter's sums at its edges
    (``start``/``end``: {calls, frees, bytes, pids}).

    ``live``: pid -> command of the tree's live processes at the window's end, to name one that
    did not load the counter. ``run_start``: the sums when the run started (before its
    ``connections`` were opened), to tell "no allocation per request" from a heap the counter
    does not see: a server that asks libc for less than one block per connection over the whole
    run (its connections' setup included) keeps its heap elsewhere - the Go runtime makes a
    stray call when it starts a thread, which alone must not read as "0.0001 allocs/req"."""
    calls = max(0, end["calls"] - start["calls"])
    frees = max(0, end["frees"] - start["frees"])
    nbytes = max(0, end["bytes"] - start["bytes"])
    block: dict[str, Any] = {
        "calls": calls,
        "frees": frees,
        "bytes": nbytes,
        "calls_per_req": calls / responses if responses > 0 else None,
        "bytes_per_req": nbytes / responses if responses > 0 else None,
        "processes": len(set(end["pids"])),
        "na": None,
    }
    counted = set(end["pids"])
    missing = sorted(pid for pid in live if pid not in counted)
    if missing:
        who = ", ".join(f"{live[pid]} ({pid})" for pid in missing[:3])
        block["na"] = (
            f"not loaded in {who}: a statically linked executable does not load the counter"
        )
    elif responses > 0:
        since = run_start if run_start is not None else start
        block["run_calls"] = run_calls = end["calls"] - since["calls"]
        if run_calls < max(1, connections):
            block["na"] = (
                f"own allocator: {run_calls} malloc call(s) over the whole run, fewer than its "
                f"{max(1, connections)} connection(s) (its heap is not libc's)"
            )
    if block["na"] is not None:
        block["calls_per_req"] = block["bytes_per_req"] = None
    return block
