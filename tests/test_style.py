"""The declared style is the tree's style: ruff's lint rules and formatter (pyproject.toml) over
the Python, clang-format 14 (.clang-format) over the C++. The suite runs these, so CI does; a
change that drifts fails here with the tool's own list of what to fix (`ruff format`,
`clang-format-14 -i` mend it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYTHON = ["python", "tests", "bench"]


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)


def _ruff() -> list[str]:
    if (
        subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True).returncode
        == 0
    ):
        return [sys.executable, "-m", "ruff"]
    pytest.fail("ruff is not installed: bash .ci/install.sh test (it is in the [test] extras)")


def test_python_passes_ruff_check_and_ruff_format():
    lint = _run([*_ruff(), "check", *PYTHON])
    assert lint.returncode == 0, lint.stdout[-4000:] + lint.stderr[-2000:]
    layout = _run([*_ruff(), "format", "--check", *PYTHON])
    assert layout.returncode == 0, layout.stdout[-4000:] + layout.stderr[-2000:]


def test_cpp_is_clang_formatted():
    tool = shutil.which("clang-format-14") or shutil.which("clang-format")
    if tool is None:
        pytest.fail(
            "clang-format is not installed: bash .ci/install.sh test (Debian clang-format-14)"
        )
    files = sorted(
        str(p.relative_to(REPO))
        for ext in ("*.cpp", "*.hpp", "*.h")
        for p in (REPO / "cpp").rglob(ext)
    )
    assert files, "no C++ files found"
    check = _run([tool, "--dry-run", "-Werror", *files])
    assert check.returncode == 0, check.stderr[-4000:]
