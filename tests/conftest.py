"""Shared fixtures.

beast_server     a started loadbench.ServerProcess (native loadbench-server, 1 worker, HTTP on
                 a free port), stopped gracefully after the test.
server_factory   server_factory(**kwargs) -> started ServerProcess with those fields
                 (workers=, tls=, header_timeout_ms=, ...); all are stopped after the test.
"""

from __future__ import annotations

import signal
from typing import Callable, Iterator

import pytest

from loadbench import ServerProcess

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
