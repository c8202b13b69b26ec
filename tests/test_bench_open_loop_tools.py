"""The open-loop tools of bench/generator_vs_peers.py beside loadbench: wrk2 (read from its own
--latency output) and loadbench without batch_reads - their command lines and what is parsed."""

from __future__ import annotations

import stat

import pytest

from bench_drivers.child import ChildRun
from bench_drivers.generators import UnsupportedMode, Wrk2, all_generators, no_batch_reads

# wrk2's output (giltene/wrk2, `-t1 -c4 -d3s -R1000 --latency`), its detailed spectrum cut short
WRK2_OUTPUT = """Running 3s test @ http://127.0.0.1:18080/plaintext
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   812.20us  355.89us   4.78ms   65.03%
    Req/Sec       -nan      -nan   0.00      0.00%
  Latency Distribution (HdrHistogram - Recorded Latency)
 50.000%  801.00us
 75.000%    1.09ms
 90.000%    1.25ms
 99.000%    1.48ms
 99.900%    2.95ms
 99.990%    4.78ms
 99.999%    4.78ms
100.000%    4.78ms

  Detailed Percentile spectrum:
       Value   Percentile   TotalCount 1/(1-Percentile)

       0.032     0.000000            1         1.00
       4.783     1.000000         2994          inf
#[Mean    =        0.812, StdDeviation   =        0.356]
----------------------------------------------------------
  2995 requests in 3.00s, 394.85KB read
  Socket errors: connect 0, read 1, write 0, timeout 2
  Non-2xx or 3xx responses: 5
Requests/sec:    998.04
"""


@pytest.fixture
def fake_wrk2(tmp_path, monkeypatch):
    path = tmp_path / "wrk"
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("WRK2", str(path))
    return str(path)


def test_wrk2_reads_its_recorded_latency_requests_and_errors(fake_wrk2: str) -> None:
    wrk2 = Wrk2()
    run = ChildRun([fake_wrk2], 0, WRK2_OUTPUT, "", 13.0, 1.0, 0.5)
    result = wrk2.parse(run, None)
    assert result.responses == 2995 and result.duration_s == 3.0
    assert result.errors == 3 and result.non_2xx == 5
    assert result.latency_us["p50"] == pytest.approx(801.0)
    assert result.latency_us["p99"] == pytest.approx(1480.0)
    assert result.latency_us["p100"] == pytest.approx(4780.0)


def test_wrk2_runs_the_open_loop_only_and_lasts_its_calibration_longer(fake_wrk2: str) -> None:
    wrk2 = Wrk2()
    assert wrk2.available and wrk2.has_open_loop
    with pytest.raises(UnsupportedMode, match="open loop only"):
        wrk2.argv("http://127.0.0.1:1/", 50, 10, True, None)
    wrk2.rate = 50_000
    argv = wrk2.argv("http://127.0.0.1:1/", 50, 10, True, None)
    assert argv == [
        fake_wrk2,
        "-t1",
        "-c50",
        "-d20s",
        "-R50000",
        "--latency",
        "http://127.0.0.1:1/",
    ]
    with pytest.raises(UnsupportedMode):
        wrk2.argv("http://127.0.0.1:1/", 50, 10, False, None)


def test_wrk2_without_its_path_is_skipped_and_says_how(monkeypatch) -> None:
    monkeypatch.delenv("WRK2", raising=False)
    wrk2 = Wrk2()
    assert not wrk2.available and "WRK2=" in wrk2.missing_reason
    assert "wrk2" in {g.name for g in all_generators()}


def test_loadbench_without_batch_reads_is_an_open_loop_variant() -> None:
    gen = no_batch_reads()
    if not gen.available:
        pytest.skip(gen.missing_reason)
    with pytest.raises(UnsupportedMode, match="open loop only"):
        gen.argv("http://127.0.0.1:1/", 50, 10, True, None)
    gen.rate = 10_000
    argv = gen.argv("http://127.0.0.1:1/", 50, 10, True, None)
    assert argv[1:4] == ["-m", "loadbench", "run"] and argv[-1] == "--no-batch-reads"
    assert "10000" in " ".join(argv)  # the rate
