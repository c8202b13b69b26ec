"""bench/server_vs_peers.py (bench_drivers.server_comparison) counts a server's own system calls (strace -c -f on its process tree)
per new connection and per keep-alive response: the counts are per response,
and for the Beast server a new connection costs no FIONBIO ioctl and no EPOLL_CTL_DEL (the
accept path of cpp/core/server/accept_loop.cpp) - which the old Asio accept made every time."""

from __future__ import annotations

import argparse
import shutil
from types import SimpleNamespace

import pytest

import loadbench
from bench_drivers import server_comparison as server_vs_peers
from bench_drivers.generators import Wrk


def test_syscall_section_renders_per_connection_and_per_response():
    record = {
        "part": "server_syscalls",
        "mode": "setup",
        "server": "nginx",
        "connections": 20,
        "responses": 6364,
        "calls_per_resp": 6.01,
        "per_resp_by_call": {"accept4": 1.0, "epoll_ctl": 1.0, "close": 1.0},
    }
    text = "\n".join(
        server_vs_peers.syscall_lines(
            [record, {**record, "mode": "keepalive", "calls_per_resp": 2.06}]
        )
    )
    assert (
        "| nginx | per new connection | 6.01 | 6,364 | accept4 1.00, epoll_ctl 1.00, close 1.00 |"
        in text
    )
    assert "| nginx | per keep-alive response | 2.06 |" in text
    assert server_vs_peers.syscall_lines([{"part": "setup"}]) == []


def test_setup_section_shows_the_kernels_segment_count_per_connection():
    def rec(server, scheme, us, segments):
        return {
            "part": "setup",
            "server": server,
            "scheme": scheme,
            "connections": 20,
            "conn_per_s": 20000.0,
            "server_cpu_us_per_conn": us,
            "wrk_cpu_us_per_conn": 44.0,
            "tcp_segments_per_conn": segments,
        }

    text = "\n".join(
        server_vs_peers.setup_lines(
            [
                rec("loadbench-server", "http", 18.0, 8.0),
                rec("nginx", "http", 20.0, 10.0),
                rec("nginx", "https", 200.0, 17.0),
            ],
            ["loadbench-server", "nginx"],
        )
    )
    assert "http TCP segments/conn" in text and "`Tcp: OutSegs`" in text
    beast, nginx = (
        next(line for line in text.splitlines() if line.startswith(f"| {name} |"))
        for name in ("loadbench-server", "nginx")
    )
    assert (
        beast.split(" | ")[2] == "**18.0**"
        and beast.split(" | ")[4] == "**8.00**"
        and beast.endswith("| n/a |")
    )
    assert nginx.split(" | ")[4] == "10.00" and nginx.endswith("| 17.00 |")


@pytest.mark.skipif(
    shutil.which("strace") is None or not Wrk().available, reason="needs strace and wrk"
)
def test_beast_makes_no_ioctl_and_no_epoll_del_per_new_connection(server_factory):
    server = server_factory()
    sampler = loadbench.Sampler(server.pid)
    peer = SimpleNamespace(
        pid=server.pid,
        url=server.url,
        snapshot=sampler.snapshot,
        name="loadbench-server",
        https=False,
    )
    args = argparse.Namespace(
        path="/plaintext", setup_concurrency=4, syscall_duration=1, generator_cpu=0
    )
    setup = server_vs_peers.count_server_syscalls(peer, Wrk(), args, keepalive=False)
    per = setup["per_resp_by_call"]
    assert setup["responses"] > 100 and not setup["errors"]
    assert "ioctl" not in per, per  # accept4(SOCK_NONBLOCK): no FIONBIO per socket
    assert per["epoll_ctl"] < 1.05, per  # the ADD only: closing removes it from epoll
    assert 1.0 <= per.get("accept4", 0) <= 2.0, (
        per
    )  # one per connection, plus an empty one per batch at most
    kept = server_vs_peers.count_server_syscalls(peer, Wrk(), args, keepalive=True)[
        "per_resp_by_call"
    ]
    # Keep-alive: a read and a write per response and nothing per request besides (how often the
    # loop waits in epoll_wait depends on timing, so it is not asserted).
    assert kept["recvfrom"] < 1.05 and kept["sendto"] < 1.05, kept
    assert (
        kept.get("epoll_ctl", 0) < 0.05
        and kept.get("ioctl", 0) < 0.05
        and kept.get("accept4", 0) < 0.05
    ), kept
