"""Who limited a run (loadbench.core.limits): the one rule the run, the capacity search, the
sweep's marks and the report share, on hand-made result blocks whose answer is known."""

from __future__ import annotations

import pytest

from loadbench.core.limits import MARKS, cpu_ceiling, limited_by, server_busy


def server(cpu_s: float, cpu_us_per_req: float = 10.0, cores: int = 1, others: float = 0.0):
    return {
        "cpu_s": cpu_s,
        "window_s": 1.0,
        "cores": cores,
        "cpu_us_per_req": cpu_us_per_req,
        "others_cpu_s": others,
        "steal_s": 0.0,
    }


def open_rate(late_us: float, loop_us: float, waits: int = 0, due: int = 1000) -> dict:
    return {
        "due": due,
        "lateness_us": {"p99": late_us},
        "loop_lateness_us": {"p99": loop_us},
        "slot_waits": waits,
        "pool": {"start": 10, "cap": 20, "size": 20},
    }


def gen(busy: float) -> dict:
    return {"utilisation": busy, "saturated": busy > 0.9}


def test_a_saturated_server_is_the_limit_whatever_the_generator_did():
    # nginx on one core at 9.40 us/req, 95 % busy, beside a saturated generator: its figure is
    # within 5 % of its CPU ceiling (1 / 9.40 us = 106 383 req/s)
    limit = limited_by({"generator": gen(0.97), "server": server(0.95, 9.40)}, machine_cores=2)
    assert limit.by == "server" and not limit.bounded and limit.mark == ""
    assert limit.ceiling_rps == pytest.approx(1e6 / 9.40)
    assert limit.server_busy == pytest.approx(0.95) and "95 % of its 1 core" in limit.reason


def test_a_saturated_generator_beside_a_server_with_headroom_bounds_the_figure():
    limit = limited_by({"generator": gen(0.97), "server": server(0.40, 2.5)}, machine_cores=2)
    assert limit.by == "generator" and limit.bounded and limit.mark == MARKS["generator"] == "§"
    assert limit.ceiling_rps == pytest.approx(400_000)  # [measured, ceiling]


def test_an_open_loop_late_by_its_own_loop_is_the_generators():
    r = {"generator": gen(0.6), "server": server(0.3), "rate": open_rate(20_000, 15_000)}
    assert limited_by(r, machine_cores=2).by == "generator"


def test_sends_that_waited_for_a_connection_are_the_pools():
    r = {"generator": gen(0.5), "server": server(0.5), "rate": open_rate(1.6e6, 200, 990)}
    limit = limited_by(r, machine_cores=2)
    assert limit.by == "pool" and limit.mark == "¶"
    assert "99 % of the sends waited for a free connection" in limit.reason
    assert "the pool held 20 of at most 20 connections" in limit.reason


def test_sends_that_waited_while_the_pool_was_below_its_cap_are_the_generators():
    # the pool did not grow to its cap: its growth waits for a loop that wakes on time, so the
    # waits were the generator's - "a larger pool" would change nothing
    rate = {**open_rate(12_000, 300, 30), "pool": {"start": 50, "cap": 686, "size": 323}}
    limit = limited_by(
        {"generator": gen(0.78), "server": server(0.5), "rate": rate}, machine_cores=2
    )
    assert limit.by == "generator" and limit.mark == "§"
    assert "the pool held 323 of at most 686 connections" in limit.reason
    assert "not the pool's cap" in limit.reason and "larger pool" not in limit.reason


def test_the_servers_own_latency_breaking_the_objective_is_the_server_even_when_late():
    # sends late by the pool, but the service time itself broke the objective by more than the
    # generator's loop delay: the server failed
    r = {"generator": gen(0.5), "server": server(0.5), "rate": open_rate(50_000, 2_000, 900)}
    assert limited_by(r, machine_cores=2, service_broke_objective=True).by == "server"


def test_other_processes_taking_the_machine_make_a_window_contended():
    r = {"generator": gen(0.5), "server": server(0.3, others=0.5), "rate": open_rate(5e5, 100)}
    limit = limited_by(r, machine_cores=2)
    assert limit.by == "contended" and limit.bounded and "25 % of the machine" in limit.reason


def test_on_time_sends_and_unsaturated_sides_leave_the_figure_to_the_server():
    r = {"generator": gen(0.5), "server": server(0.6), "rate": open_rate(300, 100)}
    assert limited_by(r, machine_cores=2).by == "server"
    # a closed loop without a sampled server: only the generator can be blamed
    assert limited_by({"generator": gen(0.5)}).by == "server"
    assert limited_by({"generator": gen(0.95)}).by == "generator"


def test_older_results_without_the_servers_cores_take_the_pinned_count():
    old = server(0.95)
    del old["cores"]
    assert server_busy(old) is None and cpu_ceiling(old) is None
    assert server_busy(old, cores=1) == pytest.approx(0.95)
    limit = limited_by({"generator": gen(0.97), "server": old}, server_cores=1, machine_cores=2)
    assert limit.by == "server" and limit.server_cores == 1


def test_an_open_loop_generator_busier_than_the_server_reads_its_latency_late():
    # Beast in a capacity step: the generator 88 % busy, the server 68 %, the service p99 broken:
    # the generator read the responses late - never the server's failure
    r = {"generator": gen(0.88), "server": server(0.68, 12.0), "rate": open_rate(56_000, 500)}
    limit = limited_by(r, machine_cores=2, service_broke_objective=True)
    assert limit.by == "generator" and "the busier side (88 %" in limit.reason
    # the same load with the server the busier side: its latency is its own
    r = {"generator": gen(0.82), "server": server(0.86, 12.0), "rate": open_rate(56_000, 500)}
    assert limited_by(r, machine_cores=2, service_broke_objective=True).by == "server"
    # a closed loop is not judged by it: its figure is the server's answer at its concurrency
    assert (
        limited_by({"generator": gen(0.88), "server": server(0.68)}, machine_cores=2).by == "server"
    )
