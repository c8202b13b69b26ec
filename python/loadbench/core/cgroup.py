"""A cgroup of its own for each server loadbench starts: exact CPU of a whole process tree.

The kernel accounts every process that ever ran in a cgroup - the forked child that served
one connection and exited between two samples included - in ns (v2 ``cpu.stat`` usage_usec,
v1 ``cpuacct.usage``). /proc alone loses what such a child ran unless its parent reaps it.

    cg, why = ServerCgroup.create("beast")   # None and a reason when no cgroup can be made
    Popen(..., preexec_fn=cg.join)          # the child moves itself in before exec
    cg.confirm(pid)                         # False (and removed) when the move did not happen
    ...
    cg.remove()                             # kills what is left in it, removes the directory

Where: a child of this process's own cgroup in the v2 hierarchy (always has cpu.stat, with or
without the cpu controller), else in the v1 cpuacct hierarchy. Names are
``loadbench-<launcher pid>-<n>``; one whose launcher is gone and that is empty is removed on
the next create (a launcher killed with SIGKILL cannot clean up after itself).

``cgroup_of(pid)`` finds such a cgroup for a pid that is its root process (the server, not
one of its workers), so a sampler in another loadbench process (``loadbench serve`` + ``run
--sample-pid``) reads it too.
"""

from __future__ import annotations

import errno
import itertools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import _core

PREFIX = "loadbench-"
_counter = itertools.count(1)


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 2 or 1
    mount: Path  # where the hierarchy is mounted
    own: Path  # this process's cgroup in it (where ours are made)


def _mounts() -> list[tuple[Path, str, str]]:
    """(mount point, fs type, super options) of every cgroup mount, from mountinfo."""
    out = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        out.append((Path(fields[4].replace("\\040", " ")), tail[0], tail[2]))
    return out


def _membership(pid: int | str) -> dict[str, str]:
    """/proc/PID/cgroup as {"": v2 path, "cpuacct": v1 path, ...}; {} when unreadable."""
    out: dict[str, str] = {}
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            out[""] = parts[2]
        for controller in parts[1].split(","):
            if controller:
                out[controller] = parts[2]
    return out


def hierarchies() -> list[Hierarchy]:
    """Where this kernel can account a tree's CPU, best first: v2, then v1 cpuacct."""
    own = _membership("self")
    found = []
    for mount, fstype, _options in _mounts():
        if fstype == "cgroup2" and "" in own:
            found.append(Hierarchy(2, mount, _under(mount, own[""])))
    for mount, fstype, options in _mounts():
        if fstype == "cgroup" and "cpuacct" in options.split(",") and "cpuacct" in own:
            found.append(Hierarchy(1, mount, _under(mount, own["cpuacct"])))
    return found


def _under(mount: Path, path: str) -> Path:
    candidate = mount / path.lstrip("/")
    return candidate if candidate.is_dir() else mount


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _populated(path: Path) -> bool:
    try:
        return bool((path / "cgroup.procs").read_text().split())
    except OSError:
        return False


def remove_stale(parent: Path) -> list[Path]:
    """Removes empty loadbench cgroups whose launcher process is gone; returns them."""
    removed = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not name.startswith(PREFIX) or not entry.is_dir():
            continue
        launcher = name[len(PREFIX) :].split("-", 1)[0]
        if not launcher.isdigit() or _pid_alive(int(launcher)) or _populated(entry):
            continue
        try:
            entry.rmdir()
            removed.append(entry)
        except OSError:
            pass
    return removed


@dataclass
class ServerCgroup:
    """One cgroup made for one server; see the module docstring."""

    path: Path
    version: int
    _procs_fd: int = field(default=-1, repr=False)

    @classmethod
    def create(cls, label: str = "server") -> tuple[Optional["ServerCgroup"], str]:
        """A new, empty cgroup, or None and one sentence saying why none could be made."""
        reasons = []
        found = hierarchies()
        if not found:
            return (
                None,
                "this kernel mounts no cgroup hierarchy that accounts CPU (no cgroup2, no cpuacct)",
            )
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:40]
        for hierarchy in found:
            remove_stale(hierarchy.own)
            path = hierarchy.own / f"{PREFIX}{os.getpid()}-{next(_counter)}-{safe}"
            try:
                path.mkdir()
            except OSError as exc:
                reasons.append(f"cannot create {path}: {exc.strerror or exc}")
                continue
            try:
                fd = os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
            except OSError as exc:
                reasons.append(f"cannot write {path}/cgroup.procs: {exc.strerror or exc}")
                _rmdir(path)
                continue
            if _core.cgroup_cpu_ns(str(path)) is None:
                os.close(fd)
                reasons.append(f"{path} has no readable CPU accounting")
                _rmdir(path)
                continue
            return cls(path, hierarchy.version, fd), ""
        return None, "; ".join(reasons)

    def join(self) -> None:
        """Call in the child before exec (preexec_fn): moves the calling process in. Never
        raises - a failed move is noticed by confirm()."""
        try:
            os.write(self._procs_fd, b"0\n")
        except OSError:
            pass

    def contains(self, pid: int) -> bool:
        key = "" if self.version == 2 else "cpuacct"
        where = _membership(pid).get(key)
        return where is not None and where.rstrip("/").endswith("/" + self.path.name)

    def confirm(self, pid: int) -> bool:
        """After the start: is `pid` in this cgroup? When not, removes it and says False."""
        self._close_fd()
        if self.contains(pid):
            return True
        self.remove()
        return False

    def cpu_ns(self) -> Optional[int]:
        return _core.cgroup_cpu_ns(str(self.path))

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def remove(self, timeout: float = 5.0) -> bool:
        """Kills whatever is still in the cgroup (only processes loadbench started live in it)
        and removes the directory; True when it is gone. Idempotent."""
        self._close_fd()
        if not self.path.exists():
            return True
        deadline = time.monotonic() + timeout
        killed = False
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    return False
            if not killed:
                self._kill_members()
                killed = True
            time.sleep(0.01)

    def _kill_members(self) -> None:
        kill_file = self.path / "cgroup.kill"
        if self.version == 2 and kill_file.exists():
            try:
                kill_file.write_text("1")
                return
            except OSError:
                pass
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def _close_fd(self) -> None:
        if self._procs_fd >= 0:
            try:
                os.close(self._procs_fd)
            except OSError:
                pass
            self._procs_fd = -1


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def cgroup_of(pid: int) -> Optional[str]:
    """The loadbench cgroup whose root process is `pid`, or None: the pid sits in a cgroup named
    loadbench-* and its parent does not (so it is the server, not one of its workers)."""
    mine = _membership(pid)
    if not mine:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None
    parents = _membership(ppid) if ppid > 0 else {}
    for key, version in (("", 2), ("cpuacct", 1)):
        path = mine.get(key)
        if not path or not path.rstrip("/").rsplit("/", 1)[-1].startswith(PREFIX):
            continue
        if parents.get(key) == path:
            continue  # a worker of the server, not its root
        for mount, fstype, options in _mounts():
            if version == 2 and fstype != "cgroup2":
                continue
            if version == 1 and (fstype != "cgroup" or "cpuacct" not in options.split(",")):
                continue
            candidate = mount / path.lstrip("/")
            if candidate.is_dir():
                return str(candidate)
    return None
