"""Plain-CMake builds of the C++ core beside the wheel (fuzzers, sanitizers).

The wheel stays optimised; these builds live in build/<name> of the source tree, are
configured once and rebuilt incrementally (-j2: the suite runs on small machines), and a
file lock keeps two pytest processes from building the same directory at once.

The fuzz targets and the sanitizer tests share one build, `instrumented_build()`: clang with
ASan + UBSan (and libFuzzer's coverage) over the whole core, so the core compiles once for both
- a second instrumented build of it was four minutes of the suite on a fresh 2-core machine.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT_S = 900


def build(
    name: str, options: Sequence[str], targets: Sequence[str], env: Mapping[str, str] | None = None
) -> Path:
    """Configure (first time) and build `targets` in build/<name>; returns the build dir."""
    build_dir = REPO / "build" / name
    build_dir.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    with open(build_dir / ".loadbench-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        configure = [
            "cmake",
            "-S",
            str(REPO),
            "-B",
            str(build_dir),
            "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
            *options,
        ]
        if not (build_dir / "CMakeCache.txt").exists() and shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        _run(configure, full_env, f"configuring build/{name}")
        _run(
            ["cmake", "--build", str(build_dir), "-j2", "--target", *targets],
            full_env,
            f"building build/{name}",
        )
    return build_dir


FUZZ_DIR = REPO / "cpp" / "tests" / "fuzz"
FUZZ_TARGETS = sorted(p.stem for p in FUZZ_DIR.glob("*_fuzz.cpp"))
# What the sanitizer tests run from the same build.
SANITIZED_TARGETS = ["loadbench_tests", "loadbench-server"]


def instrumented_build() -> Path:
    """build/fuzz: every fuzz target, the C++ unit tests and loadbench-server, under ASan + UBSan."""
    for tool in ("clang", "clang++"):
        if shutil.which(tool) is None:
            pytest.fail(
                f"{tool} not found: the fuzz and sanitizer tests need it "
                "(bash .ci/install.sh test installs clang)",
                pytrace=False,
            )
    return build(
        "fuzz",
        ["-DLOADBENCH_FUZZ=ON", "-DLOADBENCH_BUILD_TESTS=ON", "-DLOADBENCH_BUILD_PYTHON=OFF"],
        [*FUZZ_TARGETS, *SANITIZED_TARGETS],
        env={"CC": "clang", "CXX": "clang++"},
    )


def _run(argv: list[str], env: Mapping[str, str], what: str) -> None:
    proc = subprocess.run(
        argv,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=BUILD_TIMEOUT_S,
    )
    if proc.returncode != 0:
        tail = proc.stdout.decode(errors="replace")[-4000:]
        pytest.fail(f"{what} failed ({' '.join(argv)}):\n{tail}", pytrace=False)
