"""bench/server_state.py's pieces (bench_drivers.server_state): wrk's and h2load's printed
counts, and the report's table and verdict from hand-made records - the generators' spread in
each state and what priming moved - with a failed run listed on one line."""

from __future__ import annotations

from bench_drivers.server_state import render, responses_of

WRK = """Running 4s test @ http://127.0.0.1:1/plaintext
  1 threads and 50 connections
  398864 requests in 4.00s, 41.84MB read
Requests/sec:  99716.00
"""
H2LOAD = """finished in 4.00s, 27814.50 req/s, 2.92MB/s
requests: 111258 total, 111308 started, 111258 done, 111258 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 111258 2xx, 0 3xx, 0 4xx, 0 5xx
"""
H2LOAD_ALL_FAILED = "requests: 4165 total, 4215 started, 4165 done, 0 succeeded, 4165 failed"


def test_the_printed_counts_are_the_successful_responses():
    assert responses_of("wrk", WRK) == 398864
    assert responses_of("h2load", H2LOAD) == 111258
    assert responses_of("h2load", H2LOAD_ALL_FAILED) == 0  # nothing succeeded: not a figure
    assert responses_of("wrk", "connection refused") is None


def _rec(state: str, tool: str, rps: float, user: float, repeat: int = 0) -> dict:
    return {
        "peer": "python-asyncio", "state": state, "tool": tool, "repeat": repeat, "rps": rps,
        "server_user_us_per_req": user, "server_sys_us_per_req": user, "server_busy": 0.99,
    }  # fmt: skip


def test_the_verdict_says_the_generators_agree_once_primed():
    records = [
        _rec("fresh", "loadbench", 28_000, 14.0),
        _rec("fresh", "loadbench", 27_000, 14.5, repeat=1),
        _rec("fresh", "wrk", 100_000, 5.4),
        _rec("primed", "loadbench", 90_000, 5.9),
        _rec("primed", "wrk", 97_200, 5.6),
        {
            **_rec("primed", "h2load", 0, 0),
            "error": "h2load failed (exit 0):\n requests: 0 succeeded",
        },
    ]
    env = {"Date (UTC)": "2026-12-06 04:51:27", "Load average at start": "0.44 / 0.9 / 1.2"}
    text = render(records, env, "bench/server_state.py", "server-state.jsonl")
    row = next(
        line
        for line in text.splitlines()
        if line.startswith("| python-asyncio | fresh | loadbench")
    )
    assert "27 500 (27 000-28 000)" in row and "| 2 |" in row
    verdict = text.split("## Verdict", 1)[1]
    assert "fresh, the generators' medians span 3.64x (loadbench 27 500, wrk 100 000)" in verdict
    assert "primed, the generators' medians span 1.08x" in verdict
    assert "one client-closed connection moved loadbench 3.27x" in verdict
    failed = text.split("## Runs that failed", 1)[1].strip().splitlines()[0]
    assert (
        failed
        == "- python-asyncio primed h2load (repeat 0): h2load failed (exit 0): requests: 0 succeeded"
    )
