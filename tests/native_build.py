"""Plain-CMake builds of the C++ core beside the wheel (fuzzers, sanitizers).

The wheel stays optimised; these builds live in build/<name> of the source tree, are
configured once and rebuilt incrementally (-j2: the suite runs on small machines), and a
file lock keeps two pytest processes from building the same directory at once.

The fuzz targets, the C++ unit tests and the sanitized server share one build,
`instrumented_build()`: clang with ASan + UBSan (and libFuzzer's coverage) over the whole core,
so the core compiles once for all three. On a fresh 2-core machine this build is the suite's
critical path (the tests that need it wait for it at the end), so it is kept cheap: -O0
(a third of -O2's compile time under ASan; the sanitizers see more, the fuzzers run slower),
one build instead of a second optimised one for the unit tests (they ran twice, optimised
through CTest and under ASan, with the same assertions), and ccache where installed (a CI
machine's clean clone recompiles nothing it compiled before).

The suite starts the builds its tests need as soon as it has collected them, in the background
at the lowest CPU priority (`start_in_background`, from conftest.py): they take what the tests
leave of the CPU instead of stopping them, and a test that needs a build waits on its lock.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional, Sequence

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT_S = 900


def build(
    name: str,
    options: Sequence[str],
    targets: Sequence[str],
    env: Mapping[str, str] | None = None,
    build_type: str = "RelWithDebInfo",
) -> Path:
    """Configure (first time) and build `targets` in build/<name>; returns the build dir."""
    build_dir = REPO / "build" / name
    build_dir.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    with open(build_dir / ".loadbench-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _forget_other_checkout(build_dir, keep=Path(lock.name).name)
        configure = [
            "cmake",
            "-S",
            str(REPO),
            "-B",
            str(build_dir),
            f"-DCMAKE_BUILD_TYPE={build_type}",
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


def _forget_other_checkout(build_dir: Path, keep: str) -> None:
    """A build/ copied or moved from another checkout (a git worktree seeded from the main one)
    holds a CMakeCache.txt of that source tree, and cmake refuses to configure it ("does not
    match the source ... used to generate cache"): empty it but for the held lock file ``keep``
    and start afresh (ccache keeps that cheap)."""
    cache = build_dir / "CMakeCache.txt"
    if not cache.exists():
        return
    home = next(
        (
            line.split("=", 1)[1]
            for line in cache.read_text(errors="replace").splitlines()
            if line.startswith("CMAKE_HOME_DIRECTORY:")
        ),
        None,
    )
    if home is None or Path(home).resolve() == REPO.resolve():
        return
    for entry in build_dir.iterdir():
        if entry.name != keep:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


def _compiler_cache() -> list[str]:
    """ccache in front of the compilers, when installed (`.ci/install.sh test` brings it): a
    clean clone on a machine that built the same sources before compiles nothing again."""
    ccache = shutil.which("ccache")
    if ccache is None:
        return []
    return [f"-DCMAKE_CXX_COMPILER_LAUNCHER={ccache}", f"-DCMAKE_C_COMPILER_LAUNCHER={ccache}"]


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
        [
            "-DLOADBENCH_FUZZ=ON",
            "-DLOADBENCH_BUILD_TESTS=ON",
            "-DLOADBENCH_BUILD_PYTHON=OFF",
            # Line tables are all a sanitizer's or libFuzzer's stack trace reads (file:line);
            # full debug info cost 16 % more compile time and 40 % larger objects to link.
            # -O0: the server's worker.cpp took 37 s under ASan at -O2, 31 at -O1, 13 at -O0.
            "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O0 -gline-tables-only -DNDEBUG",
            # No C++ test reaches the generator's rustls client: no cargo build in this dir.
            "-DLOADBENCH_WITH_RUSTLS=OFF",
            *_compiler_cache(),
        ],
        [*FUZZ_TARGETS, *SANITIZED_TARGETS],
        env={"CC": "clang", "CXX": "clang++"},
    )


# What a test's fixture needs built -> the build that makes it, in the background.
BUILDS = {"instrumented": instrumented_build}
# The background build of this process, if it started one (a test that counts its own child
# processes leaves this one out).
background: Optional[subprocess.Popen] = None


def start_in_background(names: Sequence[str], log: Path) -> subprocess.Popen:
    """Runs the named BUILDS, one after the other, in a child process at nice 19 (its compilers
    inherit it); its own process group, so that the suite can end it, and all it started, by its
    pid. Its output goes to `log`; a build that fails there fails again, and says why, in the
    test that needs it."""
    global background
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        background = subprocess.Popen(
            [sys.executable, __file__, *sorted(names, key=list(BUILDS).index)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=lambda: os.nice(19),
        )
    return background


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


if __name__ == "__main__":
    for build_name in sys.argv[1:]:
        BUILDS[build_name]()
