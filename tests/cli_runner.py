"""The `loadbench` command line as a user runs it: `python -m loadbench ...` in a child process,
its output captured (one helper for every test that checks exit codes and messages)."""

from __future__ import annotations

import subprocess
import sys


def loadbench_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "loadbench", *args], capture_output=True, text=True, timeout=timeout
    )
