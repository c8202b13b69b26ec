"""Where the installed native pieces live."""

from __future__ import annotations

import shutil
from pathlib import Path

from .errors import ServerError

_PACKAGE_DIR = (
    Path(__file__).resolve().parents[1]
)  # python/loadbench: bin/ is installed beside core/


def server_binary() -> Path:
    """The native `loadbench-server` executable installed with this package."""
    candidate = _PACKAGE_DIR / "bin" / "loadbench-server"
    if candidate.is_file():
        return candidate
    found = shutil.which("loadbench-server")
    if found:
        return Path(found)
    raise ServerError(
        f"the native loadbench-server binary is missing (looked in {candidate} and on PATH); "
        "reinstall with `pip install .`"
    )
