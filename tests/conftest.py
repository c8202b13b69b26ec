"""Shared fixtures.

beast_server     a started loadbench.ServerProcess (native loadbench-server, 1 worker, HTTP on
                 a free port), stopped gracefully after the test.
server_factory   server_factory(**kwargs) -> started ServerProcess with those fields
                 (workers=, tls=, header_timeout_ms=, ...); all are stopped after the test.
instrumented_build_dir
                 the plain-CMake build of the C++ core beside the wheel (tests/native_build.py:
                 ASan + UBSan, the fuzz targets, the C++ unit tests, the server): started in the
                 background as soon as the suite has collected a test that needs it, waited for
                 by the first test of each worker that does.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Callable, Iterator, Optional

import native_build
import pytest
import suite_policy

from loadbench import ServerProcess

# The suite's time budget, its skips in CI and what runs alone: tests/suite_policy.py.
pytest_plugins = ["suite_policy"]

# A suite started in the background (`nohup ... &`, a job without job control) inherits SIGINT
# as ignored, and an ignored signal stays ignored across exec. The Ctrl-C tests send SIGINT to
# this process (_thread.interrupt_main) and to children they start, so set its disposition here:
# Python's handler in this process, and the default in every child (a handled signal is reset
# to the default on exec).
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def server_factory() -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def factory(**kwargs: object) -> ServerProcess:
        server = ServerProcess(**kwargs)  # type: ignore[arg-type]
        started.append(server)
        return server.start()

    yield factory
    for server in started:
        try:
            server.stop()
        finally:
            server.kill()


@pytest.fixture
def beast_server(server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    return server_factory()


@pytest.fixture(scope="session")
def instrumented_build_dir() -> Path:
    return native_build.instrumented_build()


# fixture -> the native_build.BUILDS entry it waits for
_BUILD_OF = {"instrumented_build_dir": "instrumented"}
_background_build: Optional[subprocess.Popen] = None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that need a native build run last (in collection order otherwise): the build
    then has the whole run to compile in the background, and its tests are what the two workers
    share at the end."""
    items.sort(key=lambda item: any(f in _BUILD_OF for f in item.fixturenames))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Starts the builds the collected tests need, once per run (the first xdist worker, or the
    one pytest process): they compile while the tests that need no build run."""
    global _background_build
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0" or session.config.option.collectonly:
        return
    needed = {_BUILD_OF[f] for item in session.items for f in item.fixturenames if f in _BUILD_OF}
    if needed:
        _background_build = native_build.start_in_background(
            needed, native_build.REPO / "build" / "background-build.log"
        )
        suite_policy.record_background_build(session.config, _background_build.pid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    # a run that ended early (a failure with -x, Ctrl-C) does not leave the compilers behind
    if _background_build is not None and _background_build.poll() is None:
        os.killpg(_background_build.pid, signal.SIGTERM)
        _background_build.wait()
