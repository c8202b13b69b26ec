"""A 15-second soak (bench/soak.py): echo POST load on the Beast server leaks nothing.

Bounds (documented here and in reports/soak.md):
- zero errors, and the server answered at least every response the generator counted;
- the server's fds return exactly to their idle baseline once the generator disconnects;
- RSS growth from idle start to the end of the load under 8 MiB: 20 connections each hold a
  16 KiB read buffer plus an output buffer (< 1 MiB in all); the rest is allocator slack;
- RSS growth from the steady point (after the first tenth of the run, when the connections
  and their buffers exist) to the end under 1 MiB: a leak of even 8 bytes per request would
  add several MiB over the ~10^5-10^6 requests of this run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
START_TO_END_BOUND_KIB = 8 * 1024
STEADY_TO_END_BOUND_KIB = 1024


def load_soak_module():
    spec = importlib.util.spec_from_file_location(
        "loadbench_bench_soak", REPO / "bench" / "soak.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_fifteen_second_echo_soak_is_clean(tmp_path: Path):
    soak = load_soak_module()
    r = soak.soak(
        duration_s=15.0, connections=20, body_bytes=1024, sample_interval_s=0.5, pin=False
    )
    assert r.responses > 1000, r.responses
    assert r.error_count == 0, r.errors
    assert r.server_echo_requests >= r.responses
    assert (
        r.server_echo_requests - r.responses <= r.connections
    )  # at most the requests in flight at the end
    assert r.fds_max > r.fds_baseline  # the connections were really open
    assert r.fds_after == r.fds_baseline, (r.fds_baseline, r.fds_max, r.fds_after)
    assert r.rss_growth_kib < START_TO_END_BOUND_KIB, r
    assert r.steady_rss_growth_kib < STEADY_TO_END_BOUND_KIB, r
    # the report writers work on a real result
    md = soak.to_markdown(r, "| Item | Value |\n|---|---|", "test")
    assert "PASS" in md and f"{r.responses:,}" in md
    soak.write_jsonl(r, tmp_path / "soak.jsonl", {})
    assert (tmp_path / "soak.jsonl").read_text().count("\n") == 1 + len(r.samples) + len(r.timeline)
