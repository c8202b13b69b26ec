"""Runs the C++ unit tests (GoogleTest, cpp/tests/*_test.cpp) through CTest.

A separate plain-CMake build in build/cpptests (no Python extension; native_build.cpptests_build,
the session's `cpptests_build_dir`), so it does not touch the pip build; incremental after the
first run, and its core objects come from the wheel's compile through ccache where installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


# Its setup may wait for the whole build/cpptests build (minutes on 2 cores on a fresh machine),
# which the default 300 s per-test limit does not cover.
@pytest.mark.timeout(1800)
def test_cpp_unit_tests_pass(cpptests_build_dir: Path) -> None:
    ctest = shutil.which("ctest")
    assert ctest, "ctest not found: run bash .ci/install.sh test"
    env = dict(os.environ, GTEST_COLOR="no")
    tests = subprocess.run(
        # every test case is its own process (gtest_discover_tests): two at a time
        [ctest, "--test-dir", str(cpptests_build_dir), "--output-on-failure", "--timeout", "120"]
        + ["--parallel", "2"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert tests.returncode == 0, (
        f"ctest failed (exit {tests.returncode}):\n{tests.stdout[-20000:]}"
    )
    assert "100% tests passed" in tests.stdout, tests.stdout[-5000:]
