"""Distributed runs on Dask: exact splits, exact merges, real worker processes, failures."""

from __future__ import annotations

import _thread
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("distributed", reason="the test extras install Dask (distributed)")
from distributed import Client, LocalCluster  # noqa: E402
from hdrh.histogram import HdrHistogram  # noqa: E402

import loadbench  # noqa: E402
import loadbench.distributed as lbd  # noqa: E402
from loadbench.core.errors import ConfigError, LoadbenchError  # noqa: E402
from loadbench.core.result import LatencyHistogram  # noqa: E402
from loadbench.distributed.merge import add_histograms  # noqa: E402
from loadbench.distributed.plan import plan_shards, split_exact  # noqa: E402


def _decode(h: HdrHistogram) -> LatencyHistogram:
    return LatencyHistogram.decode(
        h.encode().decode(), int(h.get_min_value()), int(h.get_max_value())
    )


def test_merged_histograms_equal_one_histogram_that_recorded_everything():
    rng = np.random.default_rng(7)
    samples = (
        np.concatenate([rng.lognormal(5, 1.2, 40_000), rng.uniform(900_000, 950_000, 600)]).astype(
            np.int64
        )
        + 1
    )
    reference = HdrHistogram(1, 3_600_000_000, 3)  # the HdrHistogram reference implementation
    for v in samples:
        reference.record_value(int(v))
    parts = []
    for chunk in np.array_split(rng.permutation(samples), 3):
        h = HdrHistogram(1, 3_600_000_000, 3)
        for v in chunk:
            h.record_value(int(v))
        parts.append(_decode(h))
    merged = add_histograms(parts)
    whole = _decode(reference)
    assert merged.count == len(samples) == whole.count
    n = min(len(merged.counts), len(whole.counts))
    assert np.array_equal(merged.counts[:n], whole.counts[:n])
    assert merged.min_us == whole.min_us and merged.max_us == whole.max_us
    for q in (50, 90, 99, 99.9, 99.99):
        assert merged.percentile(q) == whole.percentile(q) == reference.get_value_at_percentile(q)


def test_split_is_exact_and_every_shard_gets_its_own_seed():
    assert split_exact(10, 3) == [4, 3, 3] and sum(split_exact(100_001, 7)) == 100_001
    plan = plan_shards(
        3,
        {
            "connections": 10,
            "requests": 1001,
            "rate": 3000.0,
            "seed": 5,
            "max_connections": 31,
            "threads": 2,
        },
    )
    assert [s.run_kwargs["connections"] for s in plan] == [4, 3, 3]
    assert sum(s.run_kwargs["requests"] for s in plan) == 1001
    assert sum(s.run_kwargs["max_connections"] for s in plan) == 31
    assert [s.run_kwargs["rate"] for s in plan] == [1000.0] * 3
    assert len({s.run_kwargs["seed"] for s in plan}) == 3
    # constant arrivals: shard i starts i/R after the instant, so the shards interleave evenly
    assert [round(s.start_offset_s * 3000) for s in plan] == [0, 1, 2]
    with pytest.raises(ConfigError, match="3 shards need at least 3 connections"):
        plan_shards(3, {"connections": 2})


def test_a_load_shape_splits_at_every_point():
    # a rate shape: the same curve at 1/N of the rate, interleaved by its first rate
    plan = plan_shards(2, {"connections": 4, "steps": "1000:1s, 3000:2s"})
    for shard in plan:
        assert "steps" not in shard.run_kwargs
        assert shard.run_kwargs["rate_schedule"] == [(0, 500), (1, 500), (1, 1500), (3, 1500)]
    assert [round(s.start_offset_s * 1000) for s in plan] == [0, 1]
    assert len({s.run_kwargs["seed"] for s in plan}) == 2
    # a connections shape: every point's count split exactly
    plan = plan_shards(2, {"connections_schedule": "0s:5, 1s:5, 1s:9, 2s:9"})
    parts = [s.run_kwargs["connections_schedule"] for s in plan]
    assert parts == [[(0, 3), (1, 3), (1, 5), (2, 5)], [(0, 2), (1, 2), (1, 4), (2, 4)]]
    assert all("connections" not in s.run_kwargs for s in plan)  # each shard's shape sets it
    assert [s.start_offset_s for s in plan] == [0.0, 0.0]


def test_workers_are_distinct_and_spread_over_hosts():
    workers = {
        f"tcp://{h}:{p}": {"host": h, "resources": {"loadbench": 1}}
        for h in ("10.9.0.1", "10.9.0.2")
        for p in (1, 2)
    }
    workers["tcp://10.9.0.3:1"] = {"host": "10.9.0.3", "resources": {}}  # not tagged: not used
    picked = lbd.pick_workers(workers, 2)
    assert len({workers[a]["host"] for a in picked}) == 2
    assert len(set(lbd.pick_workers(workers, 4))) == 4
    with pytest.raises(
        ConfigError,
        match="5 shards need 5 workers with the 'loadbench' resource; the cluster has 4",
    ):
        lbd.pick_workers(workers, 5)


@pytest.fixture(scope="module")
def cluster():
    local = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        resources={"loadbench": 1},
        dashboard_address=":0",
    )
    client = Client(local)
    yield client
    client.close()
    local.close()


def test_two_workers_count_exactly_what_the_server_counted(cluster, server_factory):
    server = server_factory()
    r = lbd.run(
        server.url("/plaintext"), cluster=cluster, shards=2, connections=6, requests=3001, warmup=0
    )
    counted = server.stop()["requests"]
    assert r.responses == 3001 and r.error_count == 0
    assert sum(counted.values()) == 3001
    shards = r.extras["shards"]
    assert sorted(s["requests"] for s in shards) == [1500, 1501]
    assert sum(s["responses"] for s in shards) == 3001
    assert len({s["worker"] for s in shards}) == 2
    assert r.latency.count == 3001 and r.config["shards"] == 2 and r.config["connections"] == 6
    # each shard opened its connections before the instant: the window measured no setup
    assert [s["preconnected"] for s in shards] == [3, 3]
    assert r.preconnected == 6 and r.connections_opened == 0
    for s in shards:
        assert abs(s["clock_offset_ms"]) < 50  # one machine: one clock, up to the round trips
        assert s["start_skew_ms"] > -1.0  # never before the instant


def test_open_loop_rate_splits_and_merges(cluster, beast_server):
    r = lbd.run(
        beast_server.url("/plaintext"),
        cluster=cluster,
        shards=2,
        connections=4,
        rate=1000,
        duration=1.0,
        warmup=0.2,
    )
    assert r.open_loop and r.target_rate == pytest.approx(1000)
    assert sum(s["rate"] for s in r.extras["shards"]) == pytest.approx(1000)
    # every request due in the merged window has exactly one outcome, shard by shard and merged
    assert r.due == r.responses + r.error_count + r.unfinished
    assert r.due == sum(s["responses"] + s["errors"] + s["unfinished"] for s in r.extras["shards"])
    assert r.latency_uncorrected is not None and r.latency_uncorrected.count == r.responses
    assert int(r.timeline["responses"].sum()) == r.responses


def test_a_load_shape_runs_over_shards_and_its_stages_merge_exactly(cluster, server_factory):
    server = server_factory()
    r = lbd.run(
        server.url("/plaintext"),
        cluster=cluster,
        shards=2,
        connections=4,
        steps="300:1s, 600:1s",
        warmup=0,
        start_delay=1.0,
    )
    counted = sum(server.stop()["requests"].values())
    assert r.config["steps"] == [[300, 1], [600, 1]]  # the whole shape, as asked
    halves = [s["rate_schedule"] for s in r.extras["shards"]]
    assert halves == [[[0, 150], [1, 150], [1, 300], [2, 300]]] * 2
    assert [stage["rate_from"] for stage in r.stages] == [300, 600]
    for stage, due in zip(r.stages, (300, 600)):
        assert abs(stage["due"] - due) <= 2  # each shard's integral, give or take one
        assert stage["due"] == stage["responses"] + stage["errors"] + stage["unfinished"]
        assert stage["latency_us"]["p99"] <= r.latency.max_us
    # the stages add up to the merged run, which adds up to what the server answered
    assert sum(stage["due"] for stage in r.stages) == r.due
    assert sum(stage["responses"] for stage in r.stages) == r.responses == counted


def test_a_capacity_search_sends_each_step_from_the_shards(cluster, beast_server):
    found = loadbench.capacity(
        beast_server.url("/plaintext"),
        "p99<200ms",
        start=400,
        step=0.5,
        settle=0.1,
        window=0.5,
        max_steps=2,
        repeats=0,
        connections=4,
        runner=lbd.ClusterRunner(cluster, 2, start_delay=1.0),
    )
    assert [s.rate for s in found.steps] == [400, 800]
    for s in found.steps:
        shards = s.result.extras["shards"]
        assert len(shards) == 2 and sum(x["rate"] for x in shards) == pytest.approx(s.rate)
        assert s.result.due == s.result.responses + s.result.error_count + s.result.unfinished


def test_ctrl_c_stops_every_shard_and_keeps_what_they_measured(cluster, beast_server):
    timer = threading.Timer(4.5, _thread.interrupt_main)  # start delay 3 s + ~1.5 s of load
    timer.start()
    t0 = time.monotonic()
    try:
        r = lbd.run(
            beast_server.url("/plaintext"), cluster=cluster, shards=2, connections=2, duration=60
        )
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 30
    assert r.interrupted
    assert len(r.extras["shards"]) == 2 and all(s["responses"] > 0 for s in r.extras["shards"])


def test_a_scheduler_that_cannot_be_reached_is_one_clear_error_before_anything_starts():
    with pytest.raises(
        LoadbenchError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:1"
    ):
        lbd.run(
            "http://127.0.0.1:9/", cluster="tcp://127.0.0.1:1", shards=2, connections=2, duration=1
        )


def test_bad_arguments_are_refused_before_the_cluster_is_touched():
    with pytest.raises(ConfigError, match="duration must be > 0"):
        lbd.run("http://127.0.0.1:9/", cluster="tcp://127.0.0.1:1", shards=2, duration=-1)


def test_a_worker_that_dies_mid_run_loses_only_its_shard(beast_server):
    local = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        resources={"loadbench": 1},
        dashboard_address=":0",
    )
    client = Client(local)
    try:
        victim = sorted(lbd.scheduler_identity(client)["workers"])[1]
        victim_pid = client.run(os.getpid, workers=[victim])[victim]
        killer = threading.Timer(5.0, os.kill, (victim_pid, 9))  # 3 s start delay + ~2 s of load
        killer.start()
        with pytest.raises(lbd.ShardLostError) as caught:
            lbd.run(
                beast_server.url("/plaintext"), cluster=client, shards=2, connections=2, duration=6
            )
        killer.cancel()
        message = str(caught.value)
        assert "1 of 2 shards lost" in message and victim in message
        partial = caught.value.result
        assert partial is not None and partial.responses > 0
        assert len(partial.extras["shards"]) == 1
        assert partial.extras["cluster"]["lost_shards"][0]["worker"] == victim
    finally:
        client.close()
        local.close()


def test_cli_cluster_local_writes_the_merged_json(tmp_path, beast_server):
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadbench",
            "run",
            beast_server.url("/json"),
            "--cluster",
            "local",
            "--shards",
            "2",
            "-c",
            "4",
            "-n",
            "1000",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    saved = json.loads(out.read_text())
    assert saved["responses"] == 1000 and saved["config"]["shards"] == 2
    assert [s["requests"] for s in saved["shards"]] == [500, 500]
    assert loadbench.Result.from_json(out).latency.count == 1000


@pytest.mark.parametrize("command", [["run"], ["capacity", "--slo", "p99<10ms"]])
def test_cli_shards_without_cluster_is_refused(command):
    proc = subprocess.run(
        [sys.executable, "-m", "loadbench", *command, "http://127.0.0.1:9/", "--shards", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "--shards needs --cluster" in proc.stderr


def test_a_sweep_runs_distributed_and_names_its_generator_hosts(tmp_path):
    sweep = loadbench.Sweep(
        targets=[loadbench.Target("beast")],
        workloads=["plaintext"],
        concurrencies=[4],
        duration=0.5,
        warmup=0.1,
        cluster="local",
        shards=2,
        # every distributed run waits its start delay (3 s): a window this VM's steal disturbed
        # was re-run twice more for nothing this test checks
        contended_reruns=0,
    )
    sweep.run(tmp_path, progress=False, notes=False)
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["status"] == "ok", rows
    result = rows[0]["result"]
    assert result["config"]["shards"] == 2 and len(result["shards"]) == 2
    assert sum(s["responses"] for s in result["shards"]) == result["responses"] > 0
    env = json.loads((tmp_path / "environment.json").read_text())
    assert env["generators"]["cluster"] == "local" and env["generators"]["hosts"]
    with pytest.raises(ConfigError, match="shards needs cluster"):
        loadbench.Sweep(shards=2)
