"""The tracefs that the system-call counter reads its tracepoint id from, mounted when it is not.

perf_event_open(2) counts the tracepoint raw_syscalls:sys_enter by its numeric id, and the kernel
gives that id in one place only: tracefs, at events/raw_syscalls/sys_enter/id. On a machine
that boots without systemd's sys-kernel-tracing.mount (a VM started straight into a shell, a
container's own /sys) /sys/kernel/tracing exists but is empty, and the count would be n/a for a
figure the kernel can give. As root, :func:`ensure_sys_enter_id` mounts tracefs there (what
`mount -t tracefs nodev /sys/kernel/tracing` does), else debugfs at /sys/kernel/debug (which
mounts tracefs under tracing/ itself), and leaves it mounted - the state a systemd machine
boots in; mounting it changes nothing else (no tracing is turned on by it). Where it cannot, it
says why: not root, or the kernel's errno for each mount.

    reason = ensure_sys_enter_id()   # None: the id is readable now
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from typing import Optional

SYS_ENTER_ID = "events/raw_syscalls/sys_enter/id"
TRACEFS = "/sys/kernel/tracing"
DEBUGFS = "/sys/kernel/debug"
# The places the counter (cpp/core/sampler/syscall_counter.cpp, kSysEnterIdPaths) reads.
ID_PATHS = (f"{TRACEFS}/{SYS_ENTER_ID}", f"{DEBUGFS}/tracing/{SYS_ENTER_ID}")


def _mounted_tracefs() -> list[str]:
    """Where tracefs is mounted besides ID_PATHS' places (a container may mount it anywhere)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    places = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "tracefs":
            # /proc/mounts escapes a space in a path as \040
            places.append(fields[1].replace("\\040", " "))
    return places


def sys_enter_id_path() -> Optional[str]:
    """The first readable tracepoint id file: ID_PATHS, then under any other tracefs mount."""
    for path in ID_PATHS + tuple(f"{m}/{SYS_ENTER_ID}" for m in _mounted_tracefs()):
        try:
            with open(path, "rb") as f:
                if f.read(32).strip():
                    return path
        except OSError:
            continue
    return None


def _mount(source: str, target: str, fstype: str) -> int:
    """mount(2); 0, or the errno."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = (ctypes.c_char_p,) * 3 + (ctypes.c_ulong, ctypes.c_void_p)
    if libc.mount(source.encode(), target.encode(), fstype.encode(), 0, None) == 0:
        return 0
    return ctypes.get_errno()


def _words(code: int) -> str:
    return f"{errno.errorcode.get(code, str(code))}, {os.strerror(code)}"


def ensure_sys_enter_id(quiet: bool = False) -> Optional[str]:
    """Make the raw_syscalls:sys_enter id readable: None when it is (already, or once tracefs
    is mounted here), else why not, in one sentence. Says on stderr when it mounted something
    (unless ``quiet``)."""
    if sys_enter_id_path():
        return None
    if os.geteuid() != 0:
        return (
            f"tracefs is not mounted at {TRACEFS} and loadbench, not root (euid {os.geteuid()}), "
            f"cannot mount it: `sudo mount -t tracefs nodev {TRACEFS}` once would do"
        )
    tried = []
    for source, target, fstype in (
        ("nodev", TRACEFS, "tracefs"),
        ("nodev", DEBUGFS, "debugfs"),  # tracefs then appears under tracing/ by itself
    ):
        if not os.path.isdir(target):
            tried.append(f"{fstype} at {target}: no such directory")
            continue
        code = _mount(source, target, fstype)
        if code == 0:
            if sys_enter_id_path():
                if not quiet:
                    print(
                        f"loadbench: mounted {fstype} at {target} to count system calls "
                        "(left mounted)",
                        file=sys.stderr,
                    )
                return None
            tried.append(f"{fstype} at {target}: mounted, but no {SYS_ENTER_ID} in it")
        elif code == errno.EBUSY and fstype == "debugfs":
            tried.append(f"{fstype} at {target}: already mounted ({_words(code)})")
        else:
            tried.append(f"mount -t {fstype} nodev {target} failed ({_words(code)})")
    return "loadbench could not mount tracefs: " + "; ".join(tried)
