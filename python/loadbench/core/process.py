"""Child-process hygiene shared by everything that starts a server."""

from __future__ import annotations

import signal


def die_with_parent() -> None:
    """Call in a child before exec: the kernel sends it SIGTERM when the process that started it
    dies, even by SIGKILL, so no server outlives the loadbench that launched it (Linux prctl)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux/glibc: the caller's own cleanup still stops it
