"""Exact CPU and memory of servers whose processes come and go.

The reference is the server's own accounting, never wall time: the master's getrusage(SELF)
plus getrusage(CHILDREN) (every reaped descendant, us resolution), written when it is told to
settle (SIGUSR1: stop and reap all its workers). On a busy machine both sides count the same
CPU; only the few ms the master spends outside the reference (settling, the fork after it)
differ, hence a 4 % + 30 ms tolerance.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

import loadbench
from loadbench.core.cgroup import PREFIX, ServerCgroup, cgroup_of, hierarchies
from loadbench.sweep.targets import Target, launch

HELPER = Path(__file__).resolve().parent / "sampler_helpers" / "forking_server.py"
MIB_KIB = 1024


def forking_target(mode: str, rusage: Path, *args: str) -> Target:
    return Target(
        name=f"forking-{mode}",
        kind="command",
        argv=["{python}", str(HELPER), "{port}", mode, str(rusage), *args],
        ready_timeout=20.0,
    )


def settle(pid: int, rusage: Path, timeout: float = 20.0) -> dict:
    """The master's own CPU and all its reaped descendants' (seconds) after SIGUSR1."""
    rusage.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while not rusage.exists():
        assert time.monotonic() < deadline, "the server did not settle"
        time.sleep(0.01)
    return json.loads(rusage.read_text())


def total(r: dict) -> float:
    return r["self_s"] + r["children_s"]


def measure(server, rusage: Path, **load) -> tuple[dict, dict, dict, dict]:
    """One counted run between two settles, with the run's own `server` block (cgroup where
    there is one) and a /proc-only sampler's window around the same stretch."""
    proc_only = loadbench.Sampler(server.pid, cgroup=None)
    outer_start = proc_only.snapshot()
    before = settle(server.pid, rusage)
    result = loadbench.run(server.base_url + "/", sample_pid=server.pid, **load)
    after = settle(server.pid, rusage)
    outer_end = proc_only.snapshot()
    assert result.errors == {} or sum(result.errors.values()) == 0, result.errors
    return (
        before,
        after,
        result.extras["server"],
        loadbench.sampler.window(outer_start, outer_end, result.responses),
    )


def assert_close(measured: float, reference: float) -> None:
    assert abs(measured - reference) <= 0.04 * reference + 0.03, (measured, reference)


@pytest.fixture
def rusage(tmp_path: Path) -> Path:
    return tmp_path / "rusage.json"


def test_fork_per_connection_server_cpu_is_exact(rusage: Path):
    server = launch(forking_target("fork", rusage, "--burn-ms", "4"), "http", workers=1, cpus=None)
    try:
        before, after, block, proc_window = measure(
            server, rusage, connections=2, requests=150, keepalive=False
        )
    finally:
        server.stop()
    reference = total(after) - total(before)
    # The children did most of the work: a sampler that lost them would be far off.
    assert after["children_s"] - before["children_s"] > 0.6 * reference
    assert reference > 150 * 0.004
    # The run's own block: the server's cgroup (exact, children included) where one was made.
    expected_source = (
        "cgroup-v2" if hierarchies() and hierarchies()[0].version == 2 else "cgroup-v1"
    )
    if server.describe()["cgroup"] is not None:
        assert block["cpu_source"] == expected_source
        assert_close(block["cpu_s"], reference)
        assert_close(block["cpu_us_per_req"] * 150 / 1e6, reference)
    # The /proc fallback over the outer stretch (everything reaped at both ends): reaped
    # children through the master's cutime/cstime, each counted once.
    assert proc_window["cpu_source"] in ("proc-clock", "proc-ticks")
    assert_close(proc_window["cpu_s"], reference)


def test_fork_per_connection_cgroup_counts_what_proc_cannot_see(rusage: Path):
    """Within the run's window the children are still being reaped; the cgroup has them all."""
    server = launch(forking_target("fork", rusage, "--burn-ms", "4"), "http", workers=1, cpus=None)
    try:
        if server.describe()["cgroup"] is None:
            pytest.skip(f"no cgroup could be made here: {server.cgroup_note}")
        cgroup = loadbench.Sampler(server.pid)  # auto: finds the server's cgroup
        assert cgroup.cgroup == server.describe()["cgroup"]
        start = cgroup.snapshot()
        before = settle(server.pid, rusage)
        loadbench.run(server.base_url + "/", connections=2, requests=150, keepalive=False)
        after = settle(server.pid, rusage)
        end = cgroup.snapshot()
    finally:
        server.stop()
    assert start.cpu_source.startswith("cgroup-")
    assert_close(end.cpu_s - start.cpu_s, total(after) - total(before))


def test_worker_replaced_mid_window_keeps_every_workers_cpu(rusage: Path):
    server = launch(
        forking_target("replace", rusage, "--burn-ms", "3", "--max-requests", "45"),
        "http",
        workers=1,
        cpus=None,
    )
    try:
        before, after, block, proc_window = measure(server, rusage, connections=1, requests=200)
    finally:
        server.stop()
    reference = total(after) - total(before)
    assert reference > 200 * 0.003
    assert after["children_s"] - before["children_s"] > 0.6 * reference
    assert_close(proc_window["cpu_s"], reference)
    if block["cpu_source"].startswith("cgroup-"):
        assert_close(block["cpu_s"], reference)
    # Five workers served up to 45 requests each: the worker at the end is not the one at the start.
    assert len(proc_window["pids"]) == 3


def test_memory_of_master_and_workers_counts_shared_pages_once(rusage: Path):
    server = launch(
        forking_target("shared", rusage, "--workers", "2", "--shared-mib", "48"),
        "http",
        workers=1,
        cpus=None,
    )
    try:
        sampler = loadbench.Sampler(server.pid, interval=0.02)
        deadline = time.monotonic() + 10
        while len(sampler.snapshot().pids) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        start = sampler.snapshot()
        with sampler:
            result = loadbench.run(server.base_url + "/", connections=2, requests=200)
        end = sampler.snapshot()
    finally:
        server.stop()
    block = loadbench.sampler.window(start, end, result.responses)
    assert len(end.pids) == 3
    shared_kib = 48 * MIB_KIB
    # RSS counts the 48 MiB in each of the three processes; PSS splits it among them.
    assert block["rss_kib"] >= 3 * shared_kib
    assert shared_kib <= block["pss_kib"] < block["rss_kib"] - 1.5 * shared_kib
    assert block["pss_kib"] < 2 * shared_kib
    # The peak as sampled in the window is the summed RSS of some instant, never the sum of
    # lifetime peaks from different moments.
    assert block["rss_kib"] <= block["rss_max_kib"] <= block["rss_peak_kib"]


def test_rss_max_is_the_peak_sampled_inside_the_window():
    from sampler_helpers.child import Child

    def wait_for_series(condition) -> None:  # the background thread may be slow to run
        deadline = time.monotonic() + 20
        while not condition(sampler.timeseries()["rss_kib"]):
            assert time.monotonic() < deadline, "the background series never saw it"
            time.sleep(0.01)

    with Child() as child:
        sampler = loadbench.Sampler(child.pid, interval=0.01)
        child.cmd("alloc 40")
        child.cmd("free")
        start = sampler.snapshot()  # lifetime VmHWM already holds the 40 MiB; the window does not
        with sampler:
            child.cmd("alloc 24")
            wait_for_series(lambda rss: rss.max() >= start.rss_kib + 23 * MIB_KIB)
            child.cmd("free")
            wait_for_series(lambda rss: rss.iloc[-1] < start.rss_kib + 8 * MIB_KIB)
        end = sampler.snapshot()
    block = loadbench.sampler.window(start, end, 1)
    assert block["rss_max_kib"] >= start.rss_kib + 23 * MIB_KIB
    assert block["rss_max_kib"] < start.rss_kib + 34 * MIB_KIB  # not the earlier 40 MiB peak
    assert block["rss_peak_kib"] >= start.rss_kib + 39 * MIB_KIB
    assert end.rss_kib < block["rss_max_kib"]


def test_cgroups_are_removed_with_their_server(rusage: Path, server_factory):
    beast = server_factory()
    if beast.cgroup_path is None:
        pytest.skip(f"no cgroup could be made here: {beast.cgroup_note}")
    path = Path(beast.cgroup_path)
    assert path.is_dir() and cgroup_of(beast.pid) == str(path)
    assert loadbench.Sampler(beast.pid).snapshot().cpu_source.startswith("cgroup-")
    beast.stop()
    assert not path.exists()

    command = launch(
        forking_target("shared", rusage, "--workers", "2"), "http", workers=1, cpus=None
    )
    group = Path(command.describe()["cgroup"])
    assert group.is_dir()
    command.stop()
    assert not group.exists()


def test_a_worker_of_the_server_is_not_its_cgroups_root(rusage: Path):
    server = launch(
        forking_target("shared", rusage, "--workers", "1"), "http", workers=1, cpus=None
    )
    try:
        if server.describe()["cgroup"] is None:
            pytest.skip("no cgroup could be made here")
        deadline = time.monotonic() + 10
        pids: list[int] = []
        while len(pids) < 2 and time.monotonic() < deadline:
            pids = loadbench.Sampler(server.pid).snapshot().pids
            time.sleep(0.02)
        worker = pids[1]
        assert cgroup_of(worker) is None  # the master's cgroup would over-count a worker
        assert loadbench.Sampler(worker).cgroup is None
    finally:
        server.stop()


def test_stale_cgroup_of_a_dead_launcher_is_removed():
    found = hierarchies()
    if not found:
        pytest.skip("no cgroup hierarchy")
    # A launcher pid that cannot be alive: above pid_max.
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    stale = found[0].own / f"{PREFIX}{pid_max + 1}-1-test"
    try:
        stale.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot create cgroups here: {exc}")
    group, _ = ServerCgroup.create("test")
    try:
        assert not stale.exists()
    finally:
        if stale.exists():
            stale.rmdir()
        if group is not None:
            group.remove()


def test_no_cgroup_is_a_clear_fallback_never_a_crash(monkeypatch, server_factory):
    import loadbench.core.cgroup as cg

    monkeypatch.setattr(cg, "hierarchies", lambda: [])
    beast = server_factory()
    assert beast.cgroup_path is None
    assert "no cgroup hierarchy" in beast.cgroup_note
    snap = loadbench.Sampler(beast.pid).snapshot()
    assert snap.cpu_source in ("proc-clock", "proc-ticks")

    # A hierarchy where nothing can be created: the reason names the path.
    monkeypatch.setattr(cg, "hierarchies", lambda: [cg.Hierarchy(2, Path("/proc"), Path("/proc"))])
    group, why = ServerCgroup.create("x")
    assert group is None and "cannot create /proc/loadbench-" in why
    command = launch(
        Target(
            name="py",
            kind="command",
            argv=["{python}", "-m", "http.server", "{port}", "--bind", "127.0.0.1"],
        ),
        "http",
        workers=1,
        cpus=None,
    )
    try:
        described = command.describe()
        assert described["cgroup"] is None and "cannot create" in described["cgroup_note"]
    finally:
        command.stop()
