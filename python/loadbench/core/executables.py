"""Which binaries a measurement measured: the executable of every process of the sampled tree
(/proc/PID/exe: nginx itself, not the shell script that started it; the interpreter of a
script server) and the script files on their command lines, each with its SHA-256 - seed report
002 keeps "each run's latency, CPU, RSS, and binary SHA-256". A window's `server.executables`.

Hashes are cached by (device, inode, size, mtime): a sweep hashes node's 90 MB once, not per
cell.
"""

from __future__ import annotations

import hashlib
import os
from typing import Iterable, Optional

SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".rb", ".ru", ".sh", ".lua", ".php", ".pl")
_cache: dict[tuple, str] = {}


def sha256_of(path: str) -> Optional[str]:
    """The file's SHA-256 (hex), None when it cannot be read."""
    try:
        st = os.stat(path)
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if key not in _cache:
            digest = hashlib.sha256()
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
            _cache[key] = digest.hexdigest()
        return _cache[key]
    except OSError:
        return None


def _scripts(pid: int) -> list[str]:
    """Script files on the process's command line (`python3 server.py`, `node hello.js`,
    `bash run.sh`, hypercorn's `asgi_app.py:app`), as absolute paths."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            args = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return []
    out = []
    for arg in args[1:]:
        candidate = arg.split(":", 1)[0] if ".py:" in arg else arg
        if candidate.endswith(SCRIPT_SUFFIXES):
            path = os.path.join(cwd, candidate)
            if os.path.isfile(path):
                out.append(os.path.realpath(path))
    return out


def executables_of(pids: Iterable[int]) -> list[dict]:
    """[{path, sha256, role}] of the processes' executables ("executable") and scripts
    ("script"), each once, in the order first seen (the root process first)."""
    seen: dict[str, dict] = {}
    for pid in pids:
        try:
            exe = os.path.realpath(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            continue  # gone, or not ours to read
        for path, role in [(exe, "executable")] + [(s, "script") for s in _scripts(pid)]:
            if path not in seen:
                seen[path] = {"path": path, "sha256": sha256_of(path), "role": role}
    return list(seen.values())
