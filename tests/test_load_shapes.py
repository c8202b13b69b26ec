"""Load shapes (issue 30): an open-loop rate along a schedule (`rate_schedule`, `steps`) over the
same connections, measured per interval against the schedule's target and per stage.

Counts by due time are exact (the engine places arrival k where the schedule's integral reaches
k); counts by completion time (the timeline) are bounded from above exactly - nothing is
answered before it is due - and from below with a lag a busy machine can cause."""

from __future__ import annotations

import json
import math

import pytest
from cli_runner import loadbench_cli

import loadbench
from loadbench import ConfigError, ServerProcess
from loadbench.core.schedule import integral, parse_rate_schedule, steps_to_points

RAMP = "0s:500, 3s:2000"  # 3750 requests due: 500 * 3 + (2000 - 500) * 3 / 2


def test_a_ramp_follows_its_schedule_interval_by_interval(beast_server: ServerProcess):
    r = loadbench.run(
        beast_server.url("/plaintext"),
        connections=4,
        max_connections=4,  # a pool that may not grow: the same connections all along
        threads=2,
        rate_schedule=RAMP,
        interval=0.5,
        timeout=5.0,
    )
    points = parse_rate_schedule(RAMP)
    assert r.config["rate_schedule"] == [[0.0, 500.0], [3.0, 2000.0]]
    assert r.config["duration_s"] == 3.0 and r.duration_s == pytest.approx(3.0)
    assert r.target_rate == pytest.approx(1250.0)
    assert r.error_count == 0 and r.unfinished == 0
    # due: the schedule's integral, exactly (the two workers interleave into one stream)
    assert abs(r.due - 3750) <= 1
    assert r.responses == r.sends == r.due
    rows = r.timeline
    assert len(rows) == 6
    lag = 0.5  # seconds a busy machine may hold answers back
    answered = 0
    for i, row in rows.iterrows():
        start, end = row.t_s, row.t_s + row.interval_s
        expected = integral(points, start, end)
        # each row carries its target: the schedule's mean over the interval
        assert row.target_rps == pytest.approx(expected / row.interval_s, rel=1e-12)
        assert row.target_rps == pytest.approx(500 + 250 * (start + end), rel=1e-12)
        answered += row.responses
        # never answered before due (2: one due at each worker's edge), and at most `lag` behind
        assert answered <= math.ceil(integral(points, 0, end)) + 2, (i, row)
        assert answered >= integral(points, 0, max(0.0, end - lag)) - 2, (i, row)
    assert answered == r.responses
    # one stage: the whole ramp
    (stage,) = r.stages
    assert (stage["t_s"], stage["until_s"], stage["rate_from"], stage["rate_to"]) == (
        0.0,
        3.0,
        500.0,
        2000.0,
    )
    assert stage["due"] == r.due and stage["responses"] == r.responses
    assert stage["target_rps"] == pytest.approx(1250.0)
    assert stage["achieved_rps"] == pytest.approx(r.sends / 3.0)
    # the same connections all along: opened once before the schedule started, none again
    assert r.preconnected == 4 and r.connections_opened == 0 and r.reconnects == 0


def test_the_due_count_is_the_schedules_integral_with_warm_up_and_threads(
    beast_server: ServerProcess,
):
    # warm-up at the first rate (300/s for 0.4 s: 120 due, not counted), then 1125 in the
    # window: 900 over the ramp, 225 down to 0 over the last half second
    r = loadbench.run(
        beast_server.url("/plaintext"),
        connections=3,
        threads=3,
        rate_schedule=[(0, 300), (1.5, 900), (2, 0)],
        warmup=0.4,
    )
    assert abs(r.due - 1125) <= 1
    assert r.responses + r.error_count + r.unfinished == r.due and r.error_count == 0
    first, second = r.stages
    assert abs(first["due"] - 900) <= 1 and abs(second["due"] - 225) <= 1
    assert first["due"] + second["due"] == r.due
    assert (first["target_rps"], second["target_rps"]) == pytest.approx((600.0, 450.0))
    stopped = beast_server.stop()
    # the server saw the warm-up's requests too (not counted by the run), about 120 of them
    assert r.responses + 115 <= stopped["requests"]["plaintext"] <= r.responses + 125


def test_steps_reuse_the_connections_and_a_rate_of_zero_sends_nothing(
    beast_server: ServerProcess,
):
    # vegeta's issue 418: a new stage must not mean new connections
    r = loadbench.run(
        beast_server.url("/plaintext"),
        connections=6,
        max_connections=6,  # a pool that may not grow: every connection accepted was reopened
        threads=2,
        steps="400:1s, 0:1s, 1200:1s",
        interval=0.5,
    )
    assert r.config["steps"] == [[400.0, 1.0], [0.0, 1.0], [1200.0, 1.0]]
    assert r.config["rate_schedule"] == [
        [0.0, 400.0],
        [1.0, 400.0],
        [1.0, 0.0],
        [2.0, 0.0],
        [2.0, 1200.0],
        [3.0, 1200.0],
    ]
    assert r.duration_s == pytest.approx(3.0)
    assert [(s["t_s"], s["until_s"], s["rate_from"], s["rate_to"]) for s in r.stages] == [
        (0.0, 1.0, 400.0, 400.0),
        (1.0, 2.0, 0.0, 0.0),
        (2.0, 3.0, 1200.0, 1200.0),
    ]
    first, idle, last = r.stages
    assert abs(first["due"] - 400) <= 1 and abs(last["due"] - 1200) <= 1
    assert idle["due"] == idle["sends"] == idle["responses"] == 0  # nothing is due at rate 0
    assert idle["target_rps"] == 0.0 and idle["achieved_rps"] == 0.0
    assert r.due == first["due"] + last["due"] and r.error_count == 0
    assert list(r.timeline["target_rps"]) == [400.0, 400.0, 0.0, 0.0, 1200.0, 1200.0]
    stopped = beast_server.stop()
    # the pool is connected before the schedule starts (not in the window), then reused
    assert r.preconnected == 6 and r.connections_opened == 0 and r.reconnects == 0
    assert stopped["connections_accepted"] == 6 + 1  # the server's own count, priming included
    assert stopped["requests"]["plaintext"] == r.responses


def test_poisson_arrivals_along_a_schedule(beast_server: ServerProcess):
    r = loadbench.run(
        beast_server.url("/plaintext"),
        connections=2,
        rate_schedule="0s:0, 2s:2000",
        arrival="poisson",
        seed=3,
    )
    # 2000 due on average, a quarter of them in the first second
    assert abs(r.due - 2000) <= 4 * math.sqrt(2000)
    assert r.responses + r.unfinished + r.error_count == r.due
    assert r.config["arrival"] == "poisson"


def test_the_send_batch_follows_the_rate_of_the_moment(beast_server: ServerProcess):
    # A 10 ms batch: at 50/s (20 ms apart) each request goes out when due; at 2000/s the due
    # requests of 10 ms share one wake-up, so they wait ~5 ms on average (in the corrected
    # latency, as lateness)
    r = loadbench.run(
        beast_server.url("/plaintext"), connections=4, steps="50:1s, 2000:1s", send_batch=0.01
    )
    slow, fast = r.stages
    assert r.error_count == 0
    assert fast["latency_us"]["p50"] >= 3_000
    assert slow["latency_us"]["p50"] < fast["latency_us"]["p50"]


def test_the_cli_prints_each_stage_and_writes_them_in_the_json(
    beast_server: ServerProcess, tmp_path
):
    out = tmp_path / "shape.json"
    proc = loadbench_cli(
        "run", beast_server.url("/plaintext"), "-c", "2", "--steps", "300:500ms, 600:0.5s",
        "--interval", "0.25", "--no-progress", "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "open loop along a rate schedule (2 stages, mean 450.0/s)" in proc.stdout
    assert "schedule/s" in proc.stdout and "answered/s" in proc.stdout
    assert "0-0.5 s" in proc.stdout and "0.5-1 s" in proc.stdout
    d = json.loads(out.read_text())
    assert d["config"]["duration_s"] == 1.0
    assert [s["target_rps"] for s in d["stages"]] == [300.0, 600.0]
    assert [row["target_rps"] for row in d["timeline"]] == [300.0, 300.0, 600.0, 600.0]
    assert d["rate"]["target"] == pytest.approx(450.0)
    back = loadbench.Result.from_json(out)
    assert back.to_dict() == d and back.stages == d["stages"]


def test_the_cli_takes_a_rate_schedule(beast_server: ServerProcess):
    proc = loadbench_cli(
        "run", beast_server.url("/plaintext"), "-c", "2", "--rate-schedule", "0s:100, 1s:300",
        "--no-progress",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "mean 200.0/s" in proc.stdout and "100->300" in proc.stdout


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(rate_schedule="garbage"), "bad rate_schedule item 'garbage'"),
        (dict(rate_schedule="0s:100, 10s:abc"), "bad rate_schedule rate 'abc'"),
        (dict(rate_schedule="0s:100, soon:100"), "bad rate_schedule time 'soon'"),
        (dict(rate_schedule=[(0, 100), (10,)]), "expected a pair"),
        (dict(rate_schedule="0s:100, 10s:500, 5s:100"), r"point 3 \(5 s\) comes before point 2"),
        (dict(rate_schedule="0s:100, 10s:-5"), r"point 2 \(10 s\): its rate must be >= 0"),
        (dict(rate_schedule="5s:100, 10s:100"), "must start at 0s"),
        (dict(rate_schedule="0s:100"), "at least two points"),
        (dict(rate_schedule="0s:0, 10s:0"), "sends nothing"),
        (dict(rate_schedule="0s:100, 10s:100", rate=100), "a rate or a rate schedule"),
        (dict(rate_schedule="0s:100, 1s:100", steps="100:1s"), "rate_schedule or steps, not both"),
        (dict(rate_schedule="0s:100, 10s:100", duration=5), "lasts 10 s but the duration is 5 s"),
        (dict(rate_schedule="0s:100, 10s:100", requests=50), "no request count"),
        (dict(steps="1000:0s"), r"step 1 \(1000/s\) must last longer than 0 s"),
        (dict(steps="fast:10s"), "bad steps rate 'fast'"),
        (dict(steps=""), "bad steps item ''"),
        (dict(steps="100:1s", max_connections=1, connections=2), "max_connections must be"),
    ],
)
def test_bad_schedules_give_one_clear_config_error(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        loadbench.run("http://127.0.0.1:1/", **kwargs)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--rate-schedule", "0s:100, 2s:x"], "bad rate_schedule rate 'x'"),
        (["--rate-schedule", "0s:100, 2s:50, 1s:10"], "times must not decrease"),
        (["--steps", "100:1s", "-d", "5s"], "lasts 1 s but the duration is 5 s"),
        (["--steps", "100:1s", "-R", "100"], "a rate or a rate schedule"),
    ],
)
def test_bad_schedules_on_the_cli_exit_2(flags, message):
    proc = loadbench_cli("run", "http://127.0.0.1:1/", "--no-progress", *flags)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_steps_are_a_schedule_of_flat_stages():
    assert steps_to_points([(1000, 10), (2000, 5)]) == [
        (0.0, 1000),
        (10.0, 1000),
        (10.0, 2000),
        (15.0, 2000),
    ]
    options = loadbench.RunOptions(steps=[(1000, 10), (2000, 5)])
    assert options.duration == 15.0 and options.open_loop
    c = options.engine_config("http://127.0.0.1:8080/")
    assert c.rate == 0.0 and c.duration_s == 15.0
    assert c.rate_schedule == [(0.0, 1000.0), (10.0, 1000.0), (10.0, 2000.0), (15.0, 2000.0)]
    # a duration that matches the schedule is fine; the schedule's integral over a span is exact
    assert loadbench.RunOptions(rate_schedule="0s:10, 1m:10", duration=60).duration == 60.0
    assert integral([(0, 0), (4, 400)], 1, 3) == pytest.approx(400.0)


# -- the closed loop along a connections schedule (k6's ramping VUs) ---------------------------


def test_a_connections_schedule_parks_and_wakes_the_same_connections(
    beast_server: ServerProcess,
):
    # 2 connections, then 8, then 2 again, each request 10 ms at the server: 8 are opened once,
    # 6 of them wait parked (open, idle) in the last stage, none is opened again
    r = loadbench.run(
        beast_server.url("/delay?ms=10"),
        threads=2,
        connections_schedule="0s:2, 1s:2, 1s:8, 2s:8, 2s:2, 3s:2",
        interval=0.5,
    )
    assert r.config["connections"] == 8 and r.config["duration_s"] == 3.0
    assert r.config["connections_schedule"][2] == [1.0, 8.0]
    assert r.error_count == 0 and not r.open_loop
    assert list(r.timeline["connections"]) == [2.0, 2.0, 8.0, 8.0, 2.0, 2.0]
    low, high, low_again = r.stages
    assert [s["connections"] for s in r.stages] == [2.0, 8.0, 2.0]
    assert sum(s["responses"] for s in r.stages) == r.responses
    # four times the connections on a server that answers in 10 ms: well over twice the rate
    assert high["responses"] > 2 * max(low["responses"], low_again["responses"])
    assert high["rps"] == pytest.approx(high["responses"] / 1.0)
    stopped = beast_server.stop()
    assert r.connections_opened == 8 and r.reconnects == 0
    assert stopped["connections_accepted"] == 8 + 1  # the server's own count, priming included


def test_a_connections_ramp_opens_connections_as_it_grows(beast_server: ServerProcess):
    # 1 -> 4 over the first second (rounded down: 2 from 1/3 s, 3 from 2/3 s, 4 at 1 s)
    r = loadbench.run(
        beast_server.url("/delay?ms=5"), connections_schedule=[(0, 1), (1, 4), (1.5, 4)]
    )
    assert r.config["connections"] == 4 and r.error_count == 0
    (ramp, flat) = r.stages
    assert (ramp["connections_from"], ramp["connections_to"]) == (1, 4)
    assert ramp["connections"] == pytest.approx(2.5)
    assert r.connections_opened == 4
    stopped = beast_server.stop()
    assert stopped["connections_accepted"] == 4 + 1  # and the priming one (core/prime.py)


def test_the_cli_takes_a_connections_schedule(beast_server: ServerProcess):
    proc = loadbench_cli(
        "run", beast_server.url("/plaintext"), "--connections-schedule", "0s:1, 0.5s:1, 0.5s:3, 1s:3",
        "--no-progress",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "3 connections" in proc.stdout
    assert "closed loop along a connections schedule (2 stages)" in proc.stdout
    assert "0.5-1 s" in proc.stdout


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(connections_schedule="0s:1.5, 1s:2"), "bad connections_schedule count '1.5'"),
        (dict(connections_schedule="0s:2, 1s:4", rate=100), "shapes the closed loop"),
        (dict(connections_schedule="0s:2, 1s:4", connections=3), "opens at most 4 connections"),
        (dict(connections_schedule="0s:2, 1s:-4"), "its connection count must be >= 0"),
        (dict(connections_schedule="0s:2, 1s:4, 0.5s:3"), "times must not decrease"),
        (dict(connections_schedule="0s:0, 1s:0"), "sends nothing"),
        (dict(connections_schedule="0s:2, 1s:4", keepalive=False), "needs keep-alive"),
        (dict(connections_schedule="0s:2, 1s:4", duration=3), "lasts 1 s but the duration is 3 s"),
    ],
)
def test_bad_connections_schedules_give_one_clear_config_error(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        loadbench.run("http://127.0.0.1:1/", **kwargs)
