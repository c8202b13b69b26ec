"""Runs the C++ unit tests (GoogleTest, cpp/tests/*_test.cpp) through CMake and CTest.

A separate plain-CMake build in build/cpptests (no Python extension), so it does not touch
the pip build; incremental after the first run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "cpptests"


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def _show(step: str, proc: subprocess.CompletedProcess) -> str:
    tail = (proc.stdout + proc.stderr)[-20000:]
    return f"{step} failed (exit {proc.returncode}):\n{tail}"


@pytest.mark.timeout(1500)
def test_cpp_unit_tests_pass():
    if not (REPO / "CMakeLists.txt").is_file() or not (REPO / "cpp" / "tests").is_dir():
        pytest.skip("C++ sources not present (installed package without the source tree)")
    cmake = shutil.which("cmake")
    ctest = shutil.which("ctest")
    assert cmake and ctest, "cmake/ctest not found: run bash .ci/install.sh test"
    configure = _run(
        [
            cmake,
            "-S",
            str(REPO),
            "-B",
            str(BUILD),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DLOADBENCH_BUILD_TESTS=ON",
            "-DLOADBENCH_BUILD_PYTHON=OFF",
        ],
        timeout=300,
    )
    assert configure.returncode == 0, _show("cmake configure", configure)
    build = _run(
        [cmake, "--build", str(BUILD), "--parallel", "2", "--target", "loadbench_tests"],
        timeout=1200,
    )
    assert build.returncode == 0, _show("cmake build", build)
    env = dict(os.environ, GTEST_COLOR="no")
    tests = subprocess.run(
        [ctest, "--test-dir", str(BUILD), "--output-on-failure", "--timeout", "120"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert tests.returncode == 0, _show("ctest", tests)
    assert "100% tests passed" in tests.stdout, tests.stdout[-5000:]
