"""Result data: the JSON contract, its round trip, the HdrHistogram encoding and log (checked
against the `hdrhistogram` package from PyPI), and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_runner import loadbench_cli
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
from http_test_servers import ScriptedServer

import loadbench
from loadbench.core import hdrlog
from loadbench.core.result import LatencyHistogram

CONTRACT_KEYS = {
    "url",
    "config",
    "duration_s",
    "responses",
    "rps",
    "status_codes",
    "errors",
    "latency_us",
    "bytes_read",
    "bytes_written",
    "connections_opened",
    "generator",
    "timeline",
}


@pytest.fixture(scope="module")
def result() -> loadbench.Result:
    with ScriptedServer("pattern") as server:
        return loadbench.run(server.url("/"), connections=4, requests=2000)


def random_histogram(seed: int = 1) -> tuple[LatencyHistogram, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = rng.lognormal(np.log(3000), 1.5, 50_000).astype(np.int64)
    layout = hdrlog.Layout(1, 3_600_000_000, 3)
    ref = HdrHistogram(1, 3_600_000_000, 3)
    for v in values:
        ref.record_value(int(v))
    counts = np.zeros(layout.counts_length, dtype=np.int64)
    for i in range(layout.counts_length):
        counts[i] = ref.get_count_at_index(i)
    return LatencyHistogram(
        counts, 1, 3_600_000_000, 3, int(values.min()), int(values.max())
    ), values


def test_layout_and_percentiles_match_the_hdrhistogram_package():
    ours, values = random_histogram()
    ref = HdrHistogram(1, 3_600_000_000, 3)
    for v in values:
        ref.record_value(int(v))
    assert len(ours.counts) == ref.counts_len
    for q in (0, 1, 10, 50, 90, 99, 99.9, 99.99, 100):
        assert ours.percentile(q) == ref.get_value_at_percentile(q), q
    assert ours.mean == pytest.approx(ref.get_mean_value(), rel=1e-12)
    assert ours.stdev == pytest.approx(ref.get_stddev(), rel=1e-9)


def test_our_encoding_decodes_with_the_hdrhistogram_package_and_back():
    ours, _ = random_histogram(2)
    encoded = ours.encode()
    assert encoded.startswith("HISTFAAA")
    theirs = HdrHistogram.decode(encoded)
    assert theirs.get_total_count() == ours.count
    for q in (50, 99, 99.9, 100):
        assert theirs.get_value_at_percentile(q) == ours.percentile(q)
    # and their encoding decodes with ours
    counts, layout = hdrlog.decode(theirs.encode().decode())
    assert (layout.lowest, layout.highest, layout.significant_figures) == (1, 3_600_000_000, 3)
    assert np.array_equal(counts, ours.counts)


def test_the_array_coding_matches_the_byte_loop_for_every_length_and_zero_run():
    """hdrlog codes whole arrays with numpy (a report reads thousands of results); counts that
    need 1 to 9 LEB128 bytes, runs of zeros at either end and of every length, and the ninth
    byte (a count of 2**56 or more, coded by the byte loop) all come back exactly, and the bytes
    are the byte loop's."""
    layout = hdrlog.Layout(1, 3_600_000_000, 3)
    rng = np.random.default_rng(11)
    counts = np.zeros(layout.counts_length, dtype=np.int64)
    spots = rng.choice(np.arange(1, layout.counts_length - 1), 400, replace=False)
    counts[spots] = [7 ** (i % 22) + i for i in range(len(spots))]  # 1 .. 7**21 (~2**59)
    counts[-1] = 3
    items = np.array([1, -1, 127, 128, -(2**20), 2**55, 2**56 - 1])
    assert hdrlog._zigzag_leb128(items) == hdrlog._zigzag_leb128_loop(hdrlog._zigzag(items))
    for case in (counts, np.r_[counts[:-1], 0], np.zeros(5, dtype=np.int64)):
        decoded, _ = hdrlog.decode(hdrlog.encode(case, 1, 3_600_000_000, 3))
        assert np.array_equal(decoded[: len(case)], case) and not decoded[len(case) :].any()
    payload = hdrlog._zigzag_leb128_loop(hdrlog._zigzag(np.array([5, -3, 2**60, 9])))
    assert list(hdrlog._read_zigzag_leb128(payload)) == [5, -3, 2**60, 9]  # via the loop
    moderate = np.where(counts < 2**40, counts, 1)
    theirs = HdrHistogram.decode(hdrlog.encode(moderate, 1, 3_600_000_000, 3))
    assert theirs.get_total_count() == int(moderate.sum())


def test_the_hdr_log_has_one_histogram_per_interval(tmp_path: Path):
    with ScriptedServer("delay") as server:
        r = loadbench.run(server.url("/delay?ms=2"), connections=2, duration=2.5, interval=0.5)
    path = r.to_hdr_log(tmp_path / "intervals.hlog")
    reader = HistogramLogReader(str(path), HdrHistogram(1, 3_600_000_000, 3))
    counts = []
    while (h := reader.get_next_interval_histogram()) is not None:
        counts.append(h.get_total_count())
    assert counts == list(r.timeline["responses"]) and len(counts) == 5
    assert sum(counts) == r.responses


def test_a_run_exports_a_standard_hdr_log(result: loadbench.Result, tmp_path: Path):
    result = loadbench.Result.from_json(
        result.to_json()
    )  # only the window's histogram survives JSON
    path = result.to_hdr_log(tmp_path / "latency.hlog")
    reader = HistogramLogReader(str(path), HdrHistogram(1, 3_600_000_000, 3))
    interval = reader.get_next_interval_histogram()
    assert interval is not None
    assert interval.get_total_count() == result.responses == 2000
    for q in (50, 90, 99, 99.9):
        assert interval.get_value_at_percentile(q) == result.percentile(q)
    assert reader.get_next_interval_histogram() is None


def test_json_contract_and_round_trip(result: loadbench.Result, tmp_path: Path):
    d = result.to_dict()
    assert CONTRACT_KEYS <= set(d)
    assert set(d["latency_us"]) >= {"min", "mean", "stdev", "max", "p50", "p90", "p99", "p99.9"}
    assert set(d["generator"]) >= {"cpu_s", "cpu_us_per_req", "saturated"}
    assert set(d["errors"]) == {"connect", "read", "write", "timeout", "parse"}
    assert d["status_codes"] == {"200": 667, "404": 667, "500": 666}
    assert d["responses"] == 2000
    json.dumps(d)  # plain JSON types only
    path = tmp_path / "r.json"
    result.to_json(path)
    back = loadbench.Result.from_json(path)
    assert back.to_dict() == json.loads(path.read_text())
    assert back.percentile(99.9) == result.percentile(99.9)
    assert back.timeline.equals(result.timeline)
    assert loadbench.Result.from_json(result.to_json()).responses == 2000


def test_display(result: loadbench.Result):
    assert "2,000 responses" in repr(result)
    html = result._repr_html_()
    assert "<table>" in html and "requests/s" in html
    values, counts = result.latency.buckets()
    assert counts.sum() == 2000 and np.all(np.diff(values) > 0)


run_cli = loadbench_cli


def test_cli_run_prints_the_summary_and_writes_json(tmp_path: Path):
    out = tmp_path / "run.json"
    with ScriptedServer("pattern") as server:
        proc = run_cli(
            "run", server.url("/"), "-c", "3", "-n", "300", "-H", "X-A: 1", "--json", str(out)
        )
    assert proc.returncode == 0, proc.stderr
    for text in (
        "requests/s",
        "p50",
        "p99.9",
        "200: 100",
        "404: 100",
        "500: 100",
        "us/response",
        "in flight",
    ):
        assert text in proc.stdout
    d = json.loads(out.read_text())
    assert d["responses"] == 300 and d["config"]["connections"] == 3


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "ftp://x/"], "unknown scheme"),
        (["run", "http://127.0.0.1:1/", "-d", "abc"], "bad duration"),
        (["run", "http://127.0.0.1:1/", "-c", "0"], "connections must be >= 1"),
        (["run", "http://127.0.0.1:1/", "--body-file", "/nonexistent"], "cannot read body file"),
        (["run", "http://127.0.0.1:1/", "-n", "5", "-d", "1s"], "not both"),
        (["run", "http://127.0.0.1:1/", "--cpus", "9999"], "CPU 9999"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(args, message):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert proc.stderr.startswith("loadbench: error: ") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
