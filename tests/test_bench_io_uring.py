"""bench/io_uring/closed_loop.cpp, the io_uring-against-epoll prototype of
bench/io_uring_closed_loop.py: both of its loops count exactly the responses the server sent,
so the CPU per response its report divides is per real response. (Its speed is the report's
business, not this test's.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import io_uring_closed_loop as driver
import pytest

from bench_drivers.child import run_child


@pytest.fixture(scope="module")
def prototype(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return driver.build(tmp_path_factory.mktemp("io-uring"))


@pytest.mark.parametrize("mode", ["epoll", "uring"])
def test_each_loop_counts_exactly_what_the_server_answered(prototype, server_factory, mode):
    server = server_factory()
    port = server.url("/").rsplit(":", 1)[1].strip("/")
    child = run_child(
        [str(prototype), mode, "127.0.0.1", port, "/plaintext", "8", "0.1", "0.4"], timeout_s=30
    )
    assert child.returncode == 0, child.stderr
    out = json.loads(child.stdout)
    counted = sum(server.stop()["requests"].values())
    assert out["mode"] == mode and 1000 < out["responses"] <= out["responses_total"]
    # every response it read is one the server sent; the server may also have answered the one
    # request each of the 8 connections still had in flight when the loop stopped reading
    assert out["responses_total"] <= counted <= out["responses_total"] + 8
    assert out["cpu_s"] > 0 and out["batches"] > 0


def test_a_mode_it_does_not_know_is_one_clear_error(prototype):
    proc = subprocess.run(
        [str(prototype), "kqueue", "127.0.0.1", "9", "/", "1", "0", "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "none of epoll, uring, uring-waitN" in proc.stderr
