"""The sampler against the native Beast server: its figures agree with an independent read
of /proc/<pid>/stat, /proc/<pid>/status and /proc/<pid>/fd taken at the same quiet moments."""

from __future__ import annotations

import http.client
import os

import pytest
from sampler_helpers.child import proc_cpu_s, proc_stat_fields, proc_status_value

import loadbench


def _independent(pid: int) -> dict:
    return {
        "cpu_s": proc_cpu_s(pid),
        "threads": int(proc_stat_fields(pid)[17]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "rss_peak_kib": proc_status_value(pid, "VmHWM"),
    }


def test_sampler_agrees_with_proc_for_the_beast_server(beast_server):
    pid = beast_server.pid
    sampler = loadbench.Sampler(pid, tree=True)
    start, start_proc = sampler.snapshot(), _independent(pid)
    conn = http.client.HTTPConnection("127.0.0.1", beast_server.http_port, timeout=10)
    responses = 0
    for _ in range(300):
        conn.request("GET", "/plaintext")
        resp = conn.getresponse()
        assert resp.read() == b"Hello, World!\n"
        responses += 1
    during = sampler.snapshot()  # one more connection is open now
    conn.close()
    end_proc_open = _independent(pid)
    end = sampler.snapshot()

    assert start.pids == [pid] and not end.exited
    # the sampler reads ns (the server's cgroup or its CPU clock); /proc's utime and stime are
    # two counters of whole 10 ms ticks, each truncated: up to two ticks apart, never more
    assert start.cpu_s == pytest.approx(start_proc["cpu_s"], abs=0.021)
    assert end.cpu_s - start.cpu_s == pytest.approx(
        end_proc_open["cpu_s"] - start_proc["cpu_s"], abs=0.021
    )
    assert end.threads == end_proc_open["threads"] >= beast_server.workers
    assert during.fds == start.fds + 1
    assert start.fds == start_proc["fds"]
    block = loadbench.sampler.window(start, end, responses)
    assert block["pid"] == pid
    assert block["cpu_us_per_req"] == pytest.approx(block["cpu_s"] * 1e6 / responses)
    assert block["rss_peak_kib"] >= start_proc["rss_peak_kib"]
    assert block["ctx_switches"] > 0  # the server slept between requests
