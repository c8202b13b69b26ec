"""The /proc sampler against real child processes with known CPU, memory and fds."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest
from sampler_helpers.child import (
    Child,
    proc_cpu_s,
    proc_stat_fields,
    proc_status_value,
    wait_for_threads,
    wait_until_idle,
)

import loadbench
from loadbench.core.errors import ConfigError

MIB_KIB = 1024
# /proc/<pid>/stat reports utime and stime each truncated to a clock tick, so a reading is up
# to 2 ticks below the true total and a difference of two readings is off by less than 2 ticks.
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
TRUNCATION_S = 2 * TICK_S
# The child's own clock starts after it parsed the command and stops before it answers: that
# bookkeeping is CPU time the sampler sees and the child's clock does not.
BOOKKEEPING_S = 0.005


def assert_clock_matches_ticks(cpu_s: float, ticks_s: float, processes: int = 1) -> None:
    """The sampler reads each process's CPU clock (ns); /proc's utime and stime are the same
    time, each truncated to a tick: an idle process's clock is at most 2 ticks above them."""
    assert ticks_s - 1e-9 <= cpu_s <= ticks_s + processes * TRUNCATION_S + 1e-9, (cpu_s, ticks_s)


def test_cpu_time_of_two_burning_threads_within_5_percent():
    with Child() as child:
        sampler = loadbench.Sampler(child.pid, tree=False)
        wait_until_idle(child.pid)
        before = sampler.snapshot()
        own = float(child.cmd("burn 0.5 2"))  # the child's own process CPU clock
        wait_until_idle(child.pid)
        after = sampler.snapshot()
        measured = after.cpu_s - before.cpu_s
        # Compared with the child's own clock, not with the 0.5 s it was asked for: on a loaded
        # (virtual) machine the CPU time of a 0.5 s burn can grow by the time the vCPU was
        # preempted, and the sampler must report what the process really got.
        assert own >= 0.5
        assert measured == pytest.approx(own, abs=TRUNCATION_S + BOOKKEEPING_S)
        # The CPU clock (ns) is what /proc's utime+stime truncate to ticks.
        assert after.cpu_source == "proc-clock"
        assert_clock_matches_ticks(after.cpu_s, proc_cpu_s(child.pid))
        assert after.utime_s - before.utime_s > 0.25  # hashing is user time
        assert after.t > before.t
        assert after.pids == [child.pid] and not after.exited


def test_rss_and_peak_rss_of_100_mib_touched_within_5_percent():
    with Child() as child:
        sampler = loadbench.Sampler(child.pid)
        before = sampler.snapshot()
        child.cmd("alloc 100")
        touched = sampler.snapshot()
        child.cmd("free")
        freed = sampler.snapshot()

        assert touched.rss_kib - before.rss_kib == pytest.approx(100 * MIB_KIB, rel=0.05)
        assert touched.rss_peak_kib - before.rss_kib == pytest.approx(100 * MIB_KIB, rel=0.05)
        assert touched.rss_peak_kib >= touched.rss_kib
        # Freed: RSS falls back, the peak stays where it was.
        assert freed.rss_kib < touched.rss_kib - 90 * MIB_KIB
        assert freed.rss_peak_kib == touched.rss_peak_kib
        assert freed.rss_kib == proc_status_value(child.pid, "VmRSS")
        # VmHWM is max(stored peak, current RSS) from approximate per-CPU counters, so two
        # reads can differ by a few pages; the sampler never lets the peak drop.
        assert freed.rss_peak_kib == pytest.approx(proc_status_value(child.pid, "VmHWM"), rel=0.01)


def test_fds_opened_and_closed_are_seen():
    with Child() as child:
        sampler = loadbench.Sampler(child.pid)
        before = sampler.snapshot()
        child.cmd("open 50")
        opened = sampler.snapshot()
        child.cmd("close")
        closed = sampler.snapshot()
        assert opened.fds - before.fds == 50
        assert closed.fds == before.fds
        assert before.fds == len(os.listdir(f"/proc/{child.pid}/fd"))


def test_threads_and_context_switches_sum_over_all_threads():
    with Child() as child:
        sampler = loadbench.Sampler(child.pid)
        before = sampler.snapshot()
        child.cmd("burn 0.1 2")  # two worker threads that then exit
        # Idle first: between writing its answer and blocking on stdin again the main thread is
        # still running, and the switch it makes when it blocks lands after a snapshot taken then.
        wait_until_idle(child.pid)
        # The main thread's own count, read before the snapshot: counters only grow, so the
        # snapshot's sum over all threads (the exited workers' included) can never be below it.
        main_thread = proc_status_value(child.pid, "voluntary_ctxt_switches")
        after = sampler.snapshot()
        assert before.threads == after.threads == int(proc_stat_fields(child.pid)[17]) == 1
        # Each command round trip blocks the main thread on stdin at least once.
        assert after.ctx_voluntary > before.ctx_voluntary
        assert after.ctx_voluntary >= main_thread


def test_tree_sums_parent_and_two_children():
    with Child() as parent:
        first = int(parent.cmd("spawn"))
        second = int(parent.cmd("spawn"))
        tree = loadbench.Sampler(parent.pid, tree=True)
        alone = loadbench.Sampler(parent.pid, tree=False)
        for pid in (parent.pid, first, second):
            wait_until_idle(pid)
        start, start_alone = tree.snapshot(), alone.snapshot()
        assert sorted(start.pids) == sorted([parent.pid, first, second])
        assert start.pids[0] == parent.pid

        own_parent = float(parent.cmd("burn 0.1 1"))  # each process's own CPU clock
        own_first = float(parent.cmd("child 0 burn 0.2 1"))
        own_second = float(parent.cmd("child 1 burn 0.2 2"))
        pids = (parent.pid, first, second)
        for pid in pids:
            wait_until_idle(pid)
        end, end_alone = tree.snapshot(), alone.snapshot()

        # Against the processes' own clocks (see test_cpu_time_of_two_burning_threads...);
        # the parent also spent a little CPU forwarding the two child commands.
        own = own_parent + own_first + own_second
        assert min(own_parent, own_first, own_second) >= 0.1 and own >= 0.5
        assert end.cpu_s - start.cpu_s == pytest.approx(own, abs=3 * (TRUNCATION_S + BOOKKEEPING_S))
        assert end_alone.cpu_s - start_alone.cpu_s == pytest.approx(
            own_parent, abs=TRUNCATION_S + 0.015
        )
        # All three idle: the tree is exactly the sum of independent reads of their counters.
        assert_clock_matches_ticks(end.cpu_s, sum(proc_cpu_s(p) for p in pids), processes=3)
        assert end.fds == sum(len(os.listdir(f"/proc/{p}/fd")) for p in pids)
        assert end.threads == 3
        rss = sum(proc_status_value(p, "VmRSS") for p in pids)
        assert end.rss_kib == pytest.approx(rss, rel=0.02)


def test_tree_notices_a_child_appearing_mid_sampling():
    with Child() as parent:
        with loadbench.Sampler(parent.pid, interval=0.02, tree=True) as sampler:
            _wait_for_samples(sampler, 3)
            newcomer = int(parent.cmd("spawn"))
            parent.cmd("child 0 burn 0.1 1")
            seen = sampler.snapshot()
            _wait_for_samples(sampler, len(sampler.timeseries()) + 3)
        series = sampler.timeseries()
        assert seen.pids == [parent.pid, newcomer]
        assert series["processes"].iloc[0] == 1
        assert series["processes"].iloc[-1] == 2
        assert series["processes"].is_monotonic_increasing
        # The newcomer's CPU (0.1 s burned plus its start-up) is in the tree's total.
        assert series["cpu_s"].iloc[-1] - series["cpu_s"].iloc[0] >= 0.1


def test_child_leaving_the_tree_keeps_its_cpu_time():
    with Child() as parent:
        parent.cmd("spawn")
        tree = loadbench.Sampler(parent.pid, tree=True)
        parent.cmd("child 0 burn 0.2 1")
        with_child = tree.snapshot()
        assert parent.cmd("child 0 exit") == "exited"
        deadline = time.monotonic() + 5
        while len(tree.snapshot().pids) > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        without = tree.snapshot()
        assert without.pids == [parent.pid]
        assert without.cpu_s >= with_child.cpu_s  # counters never drop


def test_process_exiting_mid_sampling_keeps_its_last_sample():
    child = Child()
    try:
        sampler = loadbench.Sampler(child.pid, interval=0.02)
        child.cmd("alloc 20")
        with sampler:
            _wait_for_samples(sampler, 3)
            child.send("exit")
            child.proc.wait(timeout=5)  # reaped: /proc/<pid> is gone
            deadline = time.monotonic() + 5
            while sampler.running and sampler.exit_time() is None and time.monotonic() < deadline:
                time.sleep(0.02)
        series = sampler.timeseries()
        assert series["exited"].iloc[-1]
        assert not series["exited"].iloc[:-1].any()
        last_alive = series.iloc[-2]
        assert series["rss_kib"].iloc[-1] == last_alive["rss_kib"] > 20 * MIB_KIB
        assert series["cpu_s"].iloc[-1] >= last_alive["cpu_s"]
        totals = sampler.totals()
        assert totals["exited"] and totals["exit_t"] == pytest.approx(series["t"].iloc[-1])
        after = sampler.snapshot()  # no crash, still the last sample
        assert after.exited and after.rss_kib == last_alive["rss_kib"] and after.pids == []
    finally:
        child.close()


def test_zombie_counts_as_exited():
    child = Child()
    try:
        sampler = loadbench.Sampler(child.pid)
        alive = sampler.snapshot()
        child.send("exit")
        deadline = time.monotonic() + 5
        while proc_stat_fields(child.pid)[0] != "Z" and time.monotonic() < deadline:
            time.sleep(0.01)
        gone = sampler.snapshot()  # not reaped yet: a zombie
        assert gone.exited and not alive.exited
        assert gone.rss_kib == alive.rss_kib
    finally:
        child.close()


def test_command_name_with_spaces_and_parentheses(tmp_path: Path):
    with Child() as parent:
        renamed = int(parent.cmd("spawn"))
        parent.cmd("child 0 name a (b) c")
        stat = Path(f"/proc/{renamed}/stat").read_text()
        assert stat.startswith(f"{renamed} (a (b) c) ")
        assert int(proc_stat_fields(renamed)[1]) == parent.pid  # ppid after the LAST ')'

        alone = loadbench.Sampler(renamed, tree=False)
        tree = loadbench.Sampler(parent.pid, tree=True)
        wait_until_idle(renamed)
        wait_until_idle(parent.pid)
        before, tree_before = alone.snapshot(), tree.snapshot()
        assert_clock_matches_ticks(before.cpu_s, proc_cpu_s(renamed))
        assert tree_before.pids == [parent.pid, renamed]  # found through its parsed ppid
        own = float(parent.cmd("child 0 burn 0.3 1"))  # the child's own CPU clock
        wait_until_idle(renamed)
        wait_until_idle(parent.pid, threads=1)
        after, tree_after = alone.snapshot(), tree.snapshot()
        # utime/stime are read after the LAST ')': exactly what an independent read of the
        # same (idle, so unchanging) counters gives, before and after the burn.
        assert_clock_matches_ticks(after.cpu_s, proc_cpu_s(renamed))
        assert_clock_matches_ticks(
            tree_after.cpu_s, proc_cpu_s(renamed) + proc_cpu_s(parent.pid), processes=2
        )
        assert own >= 0.3
        assert after.cpu_s - before.cpu_s == pytest.approx(own, abs=TRUNCATION_S + BOOKKEEPING_S)
        assert (
            tree_after.cpu_s - tree_before.cpu_s >= after.cpu_s - before.cpu_s - 1e-9
        )  # float sums
        assert after.threads == 1 and after.rss_kib == proc_status_value(renamed, "VmRSS")


@pytest.mark.parametrize("pid", [0, -1, "abc", None])
def test_invalid_pid_is_a_config_error(pid):
    with pytest.raises(ConfigError, match=re.escape(f"invalid pid {pid!r}")):
        loadbench.Sampler(pid)


def test_nonexistent_pid_is_a_config_error_naming_it():
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    with pytest.raises(ConfigError, match=f"no process with pid {pid_max + 1}"):
        loadbench.Sampler(pid_max + 1)


def test_kernel_thread_and_thread_ids_are_refused():
    with pytest.raises(ConfigError, match="pid 2 is a kernel thread"):
        loadbench.Sampler(2)
    ready, release = threading.Event(), threading.Event()
    tid: list[int] = []

    def park() -> None:
        tid.append(threading.get_native_id())
        ready.set()
        release.wait(5)

    worker = threading.Thread(target=park)
    worker.start()
    try:
        ready.wait(5)
        with pytest.raises(ConfigError, match=f"pid {tid[0]} is a thread of process {os.getpid()}"):
            loadbench.Sampler(tid[0])
    finally:
        release.set()
        worker.join()


def test_invalid_interval_is_a_config_error():
    with pytest.raises(ConfigError, match="interval"):
        loadbench.Sampler(os.getpid(), interval=0)


def test_timeseries_and_totals_of_a_background_series():
    with Child() as child:
        with loadbench.Sampler(child.pid, interval=0.02) as sampler:
            _wait_for_samples(sampler, 2)
            child.cmd("burn 0.2 1")
            _wait_for_samples(sampler, len(sampler.timeseries()) + 2)
        df = sampler.timeseries()
        assert not sampler.running
        assert list(df.columns[:3]) == ["t", "cpu_s", "utime_s"]
        assert df["t"].is_monotonic_increasing and df["cpu_s"].is_monotonic_increasing
        assert (df["pids" if "pids" in df else "processes"] == 1).all()
        totals = sampler.totals()
        assert totals["samples"] == len(df)
        assert totals["cpu_s"] == pytest.approx(df["cpu_s"].iloc[-1] - df["cpu_s"].iloc[0])
        assert totals["cpu_s"] >= 0.19
        assert 0 <= totals["machine"]["idle_share"] <= 1
        assert totals["sampler_cpu_s"] > 0
        assert 1 <= totals["proc_listings"] <= totals["samples"]
        assert not totals["exited"]
        frozen = len(sampler.timeseries())
        time.sleep(0.1)
        assert len(sampler.timeseries()) == frozen  # stopped means stopped


def test_window_block_from_two_snapshots():
    with Child() as child:
        sampler = loadbench.Sampler(child.pid)
        start = sampler.snapshot()
        child.cmd("open 3")
        child.cmd("burn 0.2 1")
        wait_for_threads(child.pid, 1)
        end = sampler.snapshot()
        block = loadbench.sampler.window(start, end, responses=1000)
        assert block["pid"] == child.pid
        assert block["cpu_s"] == pytest.approx(end.cpu_s - start.cpu_s)
        assert block["cpu_us_per_req"] == pytest.approx(block["cpu_s"] * 1e6 / 1000)
        assert block["fds_end"] - block["fds_start"] == 3
        assert block["rss_peak_kib"] == end.rss_peak_kib
        assert block["threads"] == 1
        assert (
            block["ctx_switches"]
            == (end.ctx_voluntary - start.ctx_voluntary)
            + (end.ctx_involuntary - start.ctx_involuntary)
            > 0
        )
        shares = block["machine"]
        assert 0 <= shares["steal_share"] <= 1 and 0 <= shares["idle_share"] <= 1
        assert loadbench.sampler.window(start, end, responses=0)["cpu_us_per_req"] is None


def test_per_request_figures_divide_by_the_responses_between_the_snapshots():
    """A snapshot is taken when the run's thread wakes, late on a busy machine: the per-request
    figures divide by the generator's count read around each snapshot's tree read (the midpoint
    of a read just before and one just after), not by the window's exact count."""
    from loadbench.core.sampler import WindowEdges

    reads = iter(range(0, 1000, 100))  # each call: 100 more responses completed
    with Child() as child:
        edges = WindowEdges(loadbench.Sampler(child.pid), warmup_s=0.01, duration_s=0.01)
        edges.before_start()
        edges.started(0.0, lambda: next(reads))
        while edges.end is None:
            time.sleep(edges.wait_s(0.01))
            edges.poll()
        block = edges.block(responses=1000)
    assert (edges.start.completed, edges.end.completed) == (50.0, 250.0)  # 0|100, 200|300
    assert block["span_responses"] == 200
    assert block["cpu_us_per_req"] == pytest.approx(block["cpu_s"] * 1e6 / 200)
    # without the generator's count (a distributed run): the window's exact count
    assert loadbench.sampler.window(edges.start, edges.end, 1000)["span_responses"] is None


def test_machine_counters_match_proc_stat():
    snap = loadbench.Sampler(os.getpid()).snapshot()
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:9]
    ticks = os.sysconf("SC_CLK_TCK")
    names = ["user_s", "nice_s", "system_s", "idle_s", "iowait_s", "irq_s", "softirq_s", "steal_s"]
    for name, value in zip(names, fields):
        assert getattr(snap.machine, name) == pytest.approx(int(value) / ticks, abs=2.0), name
    assert snap.machine.loadavg_1m == pytest.approx(os.getloadavg()[0], abs=0.5)


def _wait_for_samples(sampler: loadbench.Sampler, count: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while len(sampler.timeseries()) < count:
        assert time.monotonic() < deadline, f"fewer than {count} samples after {timeout} s"
        time.sleep(0.01)
