"""The open loop's busy-poll: generator threads that own their CPUs poll instead of sleeping
(core/busy_poll.py, Worker::run). Exact schedules and counts, which loop ran in the JSON, the
choice and its refusals. How much sooner its sends leave is measured in bench/, not here."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from cli_runner import loadbench_cli

import loadbench
from loadbench import ConfigError, ServerProcess
from loadbench.core import _core, busy_poll
from loadbench.core.busy_poll import choose_loop, pinned_elsewhere
from loadbench.core.limits import limited_by
from loadbench.core.options import RunOptions

CPUS = sorted(os.sched_getaffinity(0))


def test_a_busy_polled_run_sends_its_exact_schedule_and_says_which_loop_ran(
    beast_server: ServerProcess,
):
    r = loadbench.run(
        beast_server.url("/plaintext"),
        rate=3000,
        requests=900,
        connections=4,
        cpus=[CPUS[-1]],
        busy_poll=True,
    )
    assert r.responses == r.sends == r.due == 900 and r.error_count == 0 and r.unfinished == 0
    assert beast_server.stop()["requests"]["plaintext"] == 900
    d = r.to_dict()
    assert d["config"]["busy_poll"] is True and d["config"]["loop"] == "busy-poll, as asked"
    # a polling loop never waits, so it counts no wake-ups; what it did is its working time
    assert r.wakeups == 0 and "wakeups" not in d["rate"]
    assert d["rate"]["busy_work_ns"] == r.busy_work_ns > 0
    # its CPU is the whole thread's window; the work a share of it
    assert 0 < d["generator"]["work_share"] <= 1.0
    assert d["generator"]["work_us_per_req"] == pytest.approx(r.busy_work_ns / 1e3 / 900)
    assert r.busy_work_ns <= r.cpu_s * 1e9 * 1.05 + 5e6
    # it reads each response at once and still times it by its arrival in the kernel
    assert r.latency_uncorrected.count == 900 and d["config"]["batch_reads"] is True
    back = loadbench.Result.from_dict(json.loads(json.dumps(d)))
    assert back.to_dict() == d and back.busy_polled and back.busy_work_ns == r.busy_work_ns


@pytest.mark.skipif(len(CPUS) < 2, reason="two threads on CPUs of their own need two CPUs")
def test_two_polling_threads_send_the_exact_interleaved_schedule(beast_server: ServerProcess):
    r = loadbench.run(
        beast_server.url("/plaintext"),
        rate=4000,
        requests=1000,
        connections=4,
        threads=2,
        cpus=CPUS[:2],
        busy_poll=True,
    )
    assert r.responses == r.sends == r.due == 1000 and r.error_count == 0
    assert beast_server.stop()["requests"]["plaintext"] == 1000
    assert r.to_dict()["config"]["busy_poll"] is True


@pytest.mark.parametrize("protocol", ["h2", "h3"])
def test_http2_and_http3_open_loops_busy_poll_with_exact_counts(server_factory, protocol):
    """Their sessions share the loop: HTTP/2 streams over h2c, HTTP/3 over QUIC with its timers
    (ACK delay, loss detection) run by the polling pass."""
    if protocol == "h3" and not _core.http3_available():
        pytest.skip("this build has no HTTP/3")
    server = server_factory(**({"tls": True, "h3": True} if protocol == "h3" else {}))
    r = loadbench.run(
        server.url("/plaintext", https=protocol == "h3"),
        protocol=protocol,
        streams=4,
        rate=2000,
        requests=600,
        connections=2,
        cpus=[CPUS[-1]],
        busy_poll=True,
    )
    assert r.responses == r.sends == r.due == 600 and r.error_count == 0, r.first_error
    assert r.to_dict()["config"]["busy_poll"] is True and r.busy_work_ns > 0
    assert server.stop()["requests"]["plaintext"] == 600


def test_the_sleeping_tick_stays_when_asked_and_says_so(beast_server: ServerProcess):
    r = loadbench.run(
        beast_server.url("/plaintext"),
        rate=2000,
        requests=300,
        connections=2,
        cpus=[CPUS[-1]],
        busy_poll=False,
    )
    assert r.responses == r.sends == 300
    d = r.to_dict()
    assert d["config"]["busy_poll"] is False
    assert d["config"]["loop"] == "the sleeping tick, as asked (--no-busy-poll)"
    assert r.wakeups > 0 and "busy_work_ns" not in d["rate"] and "work_share" not in d["generator"]


def test_the_default_polls_only_on_pinned_cpus_of_the_generators_own(monkeypatch):
    monkeypatch.setattr(busy_poll, "pinned_elsewhere", lambda cpus: [])
    monkeypatch.setattr(busy_poll, "busy_share", lambda cpus: 0.05)
    assert choose_loop(None, True, [1], 1).busy_poll is True
    assert choose_loop(None, True, [1], 1).why == "busy-poll: CPU 1 the generator's own"
    assert choose_loop(None, True, None, 1) == busy_poll.LoopChoice(
        False, "the sleeping tick: the generator is not pinned (--cpus)"
    )
    assert choose_loop(None, True, [1], 2).why == "the sleeping tick: 2 threads share 1 CPU(s)"
    assert choose_loop(None, False, [1], 1).busy_poll is False  # a closed loop has no tick
    # something unpinned kept the CPU busy just before: the tick, and why
    monkeypatch.setattr(busy_poll, "busy_share", lambda cpus: 0.6)
    assert choose_loop(None, True, [1], 1).why == (
        "the sleeping tick: CPU 1 was 60 % busy with other work just before the run (busy-poll "
        "takes a CPU at most 20 % busy)"
    )
    assert choose_loop(True, True, [1], 1).busy_poll is True  # asked for: not second-guessed
    monkeypatch.setattr(busy_poll, "pinned_elsewhere", lambda cpus: ["nginx (pid 42)"])
    tick = choose_loop(None, True, [0], 1)
    assert (
        tick.busy_poll is False
        and tick.why == "the sleeping tick: nginx (pid 42) is pinned to CPU 0 too"
    )
    asked = choose_loop(True, True, [0], 1)
    assert asked.busy_poll is True and "nginx (pid 42)" in (asked.warning or "")


def test_a_cpu_kept_busy_reads_busy_and_an_idle_one_does_not(tmp_path):
    # /proc/stat as the kernel writes it, read twice: CPU 1 busy 60 of 100 ticks, CPU 0 idle
    first = "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 10 0 0 90 0 0 0 0 0 0\ncpu1 10 0 0 90 0 0 0 0 0 0\n"
    then = "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 10 0 0 190 0 0 0 0 0 0\ncpu1 60 0 10 130 0 0 0 0 0 0\n"

    class Stat:
        def __init__(self):
            self.readings = iter([first, then])

        def read_text(self):
            return next(self.readings)

    assert busy_poll.busy_share([1], seconds=0, stat=Stat()) == pytest.approx(0.6)
    assert busy_poll.busy_share([0], seconds=0, stat=Stat()) == 0.0
    assert busy_poll.busy_share([1], seconds=0, stat=tmp_path / "absent") is None


def test_a_process_pinned_to_a_cpu_is_found_and_an_unpinned_one_is_not():
    cpu = CPUS[-1]
    pinned = subprocess.Popen(["sleep", "30"])
    loose = subprocess.Popen(["sleep", "30"])
    try:
        if len(CPUS) > 1:
            os.sched_setaffinity(pinned.pid, {cpu})
        else:
            pytest.skip("on one CPU every process is pinned to it")
        deadline = time.monotonic() + 5
        found = pinned_elsewhere([cpu])
        while f"sleep (pid {pinned.pid})" not in found and time.monotonic() < deadline:
            time.sleep(0.05)
            found = pinned_elsewhere([cpu])
        assert f"sleep (pid {pinned.pid})" in found
        assert f"sleep (pid {loose.pid})" not in found
        # kernel threads (ksoftirqd/N, migration/N ...) are pinned by design and never named
        assert not any(name.startswith(("ksoftirqd", "migration", "cpuhp")) for name in found)
    finally:
        for p in (pinned, loose):
            p.kill()
            p.wait()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(busy_poll=True), "busy-poll is for an open loop"),
        (dict(rate=100, busy_poll="yes"), "busy_poll must be true, false or unset"),
        (dict(rate=100, busy_poll=True, threads=2, cpus=[0]), "2 generator threads on 1 CPU"),
    ],
)
def test_busy_poll_that_cannot_work_is_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        RunOptions(duration=0.1, **kwargs)


def test_busy_poll_from_the_cli(beast_server: ServerProcess, tmp_path):
    out = tmp_path / "r.json"
    proc = loadbench_cli(
        "run", beast_server.url("/plaintext"), "-q", "2000", "-n", "200", "--busy-poll",
        "--cpus", str(CPUS[-1]), "--no-progress", "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "busy-poll:" in proc.stdout and "the rest polling" in proc.stdout
    assert "  loop          busy-poll, as asked" in proc.stdout
    d = json.loads(out.read_text())
    assert d["config"]["busy_poll"] is True and d["responses"] == 200
    both = loadbench_cli("run", "http://127.0.0.1:1/", "-q", "10", "--busy-poll", "--no-busy-poll")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_a_polling_generator_is_judged_by_its_work_not_its_whole_core():
    result = {
        "generator": {"utilisation": 1.0, "work_share": 0.4, "saturated": False},
        "server": None,
        "rate": {"target": 1000, "achieved": 1000, "lateness_us": {"p99": 5}},
        "responses": 1000,
    }
    assert limited_by(result).by != "generator"
    result["generator"].update(work_share=0.99, saturated=True)
    assert limited_by(result).by == "generator"
