"""bench/io_uring/http1_loop.cpp, the io_uring-against-epoll prototype of
bench/io_uring_closed_loop.py and bench/io_uring_open_loop.py: its loops count exactly the
responses the server sent, so the CPU per response the reports divide is per real response, and
the open loop sends what its schedule made due. (Their speed is the reports' business, not this
test's.)"""

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
        [str(prototype), mode, "127.0.0.1", port, "/plaintext", "8", "0.1", "0.3"], timeout_s=30
    )
    assert child.returncode == 0, child.stderr
    out = json.loads(child.stdout)
    counted = sum(server.stop()["requests"].values())
    assert out["mode"] == mode and 1000 < out["responses"] <= out["responses_total"]
    # every response it read is one the server sent; the server may also have answered the one
    # request each of the 8 connections still had in flight when the loop stopped reading
    assert out["responses_total"] <= counted <= out["responses_total"] + 8
    assert out["cpu_s"] > 0 and out["batches"] > 0


@pytest.mark.parametrize("mode", ["epoll-tick", "uring-tick"])
def test_the_open_loop_sends_its_schedule_and_counts_exactly(prototype, server_factory, mode):
    server = server_factory()
    port = server.url("/").rsplit(":", 1)[1].strip("/")
    # 4000 req/s for 0.05 s of warm-up and 0.25 s of window, over 4 connections
    child = run_child(
        [str(prototype), mode, "127.0.0.1", port, "/plaintext", "4", "0.05", "0.25", "4000"],
        timeout_s=30,
    )
    assert child.returncode == 0, child.stderr
    out = json.loads(child.stdout)
    counted = sum(server.stop()["requests"].values())
    # due every 250 us from the start: 1200 by the window's end, 1000 of them in the window (the
    # window closes at the first pass past its end, give or take a request)
    assert 1195 <= out["responses_total"] <= 1205 and 995 <= out["sends"] <= 1005
    # every request it sent was answered and read, but those in flight when it stopped
    assert out["responses_total"] <= counted <= out["responses_total"] + 4
    assert 0 <= out["lateness_p50_us"] <= out["lateness_p99_us"]


def test_a_mode_it_does_not_know_is_one_clear_error(prototype):
    proc = subprocess.run(
        [str(prototype), "kqueue", "127.0.0.1", "9", "/", "1", "0", "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "none of epoll, uring, uring-waitN" in proc.stderr
    proc = subprocess.run(
        [str(prototype), "uring-wait8", "127.0.0.1", "9", "/", "1", "0", "1", "1000"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "none of epoll, epoll-tick, uring, uring-tick" in proc.stderr
