"""The sweep arithmetic on hand-computed cases."""

import math

import pytest

from loadbench import analysis as an


def test_median_spread_of_three_repeats():
    s = an.median_spread([120.0, 100.0, 130.0])
    assert (s.median, s.min, s.max, s.n) == (120.0, 100.0, 130.0, 3)
    assert s.relative_range == pytest.approx(30.0 / 120.0)


def test_median_spread_even_count_skips_missing():
    s = an.median_spread([10.0, None, 20.0, float("nan"), 40.0, 30.0])
    assert (s.median, s.min, s.max, s.n) == (25.0, 10.0, 40.0, 4)
    assert an.median_spread([None, float("nan")]) is None
    assert an.median_spread([]) is None


def test_littles_law_inflight():
    # 20 000 req/s at a mean of 500 us -> 10 requests in flight.
    assert an.littles_law_inflight(20_000, 500) == pytest.approx(10.0)
    assert an.littles_law_inflight(0, 500) == 0
    with pytest.raises(ValueError):
        an.littles_law_inflight(-1, 5)


def test_the_one_median_on_odd_and_even_counts():
    assert an.median([3.0, 1.0, 2.0]) == 2.0  # odd: the middle value
    assert an.median([4.0, 1.0, 3.0, 2.0]) == 2.5  # even: the mean of the two middle values
    assert an.median([7.0]) == 7.0
    assert an.median([1.0, 2.0]) == 1.5
    assert an.median([None, float("nan"), 5.0, 1.0]) == 3.0
    assert an.median([]) is None and an.median([None]) is None


def test_underdriven_needs_lost_slots_and_a_cause():
    assert an.UNDERDRIVEN_FRACTION == 0.9
    assert an.is_starved(44.9, 50) and not an.is_starved(45.0, 50)
    assert not an.is_starved(0.98, 1)
    with pytest.raises(ValueError):
        an.is_starved(1, 0)
    # fires: 2 of 10 in flight, with connect errors that lost the slots
    assert (
        an.underdriven_cause(2.0, 10, errors=300, reconnects=0)
        == "in flight 2.0 of 10 (300 errors)"
    )
    assert (
        an.underdriven_cause(40.0, 50, errors=0, reconnects=12)
        == "in flight 40.0 of 50 (12 reconnects)"
    )
    # does not fire: a healthy loop (L ~ C), or L < C without a cause the generator saw
    assert an.underdriven_cause(49.8, 50, errors=5, reconnects=0) is None
    assert an.underdriven_cause(17.2, 20, errors=0, reconnects=0) is None
    assert an.underdriven_cause(None, 20, errors=3, reconnects=0) is None


def test_outcome_shares_and_outside_cpu():
    assert an.non_2xx({"200": 70, "503": 30, 404: 1, "204": 5}) == 31
    assert an.bad_share(non2xx=30, errors=0, responses=100) == pytest.approx(0.3)
    assert an.bad_share(non2xx=0, errors=10, responses=90) == pytest.approx(0.1)
    assert an.bad_share(0, 0, 0) is None
    # 2 cores x 2 s = 4 CPU-s; busy 75 % = 3 s; server 1 s + generator 1 s -> others 1 s = 25 %
    assert an.outside_cpu_share(0.75, 2.0, 2, 1.0, 1.0) == pytest.approx(0.25)
    assert an.outside_cpu_share(0.40, 2.0, 2, 1.0, 1.0) == 0.0  # never negative
    # the benchmark's own loopback softirq time (charged to no task) is not "outside"
    assert an.outside_cpu_share(0.75, 2.0, 2, 1.0, 1.0, irq_share=0.06) == pytest.approx(0.19)
    assert an.outside_cpu_share(None, 2.0, 2, 1.0, 1.0) is None
    assert an.outside_cpu_share(0.5, 2.0, None, 1.0, 1.0) is None


def test_cpu_us_per_request_and_connection_rate():
    # 0.5 s of server CPU over 40 000 responses = 12.5 us each.
    assert an.cpu_us_per_request(0.5, 40_000) == pytest.approx(12.5)
    assert an.cpu_us_per_request(0.5, 0) is None
    assert an.connection_rate(3_000, 2.0) == 1500.0
    assert an.connection_rate(3, 0) is None


def test_best_of_skips_missing_and_excluded():
    rps = {"beast": 100.0, "node": 120.0, "nginx": None, "py": 130.0}
    assert an.best_of(rps, higher_is_better=True) == "py"
    assert an.best_of(rps, higher_is_better=True, excluded=["py"]) == "node"
    p99 = {"beast": 1.0, "node": 0.5, "py": 0.5}
    assert an.best_of(p99, higher_is_better=False) == "node"  # tie: first in order
    assert an.best_of(p99, higher_is_better=False, excluded=["beast", "node", "py"]) is None
    assert an.best_of({"a": float("nan")}, higher_is_better=True) is None


def test_ratio_to_baseline():
    r = an.ratio_to_baseline({"beast": 200.0, "node": 50.0, "py": None}, "beast")
    assert r == {"beast": 1.0, "node": 0.25, "py": None}
    assert an.ratio_to_baseline({"a": 1.0, "b": 0.0}, "b") == {"a": None, "b": None}
    assert an.ratio_to_baseline({"a": 1.0}, "missing") == {"a": None}


def test_generator_bound_flag_and_mean():
    assert an.is_generator_bound({"generator": {"saturated": True}})
    assert not an.is_generator_bound({"generator": {"saturated": False}})
    assert not an.is_generator_bound({})
    assert an.arithmetic_mean([1.0, None, 2.0, 6.0]) == 3.0
    assert an.arithmetic_mean([None]) is None
    assert math.isinf(an.Spread(0.0, -1.0, 1.0, 2).relative_range)


def test_outside_share_counts_other_processes_and_steal_over_the_window():
    server = {
        "window_s": 2.0,
        "cpu_s": 1.9,
        "others_cpu_s": 0.1,
        "steal_s": 0.3,
        "machine": {"busy_share": 0.99},
    }  # the busy share is not read when others_cpu_s is there
    assert an.outside_share(server, 2) == pytest.approx(0.4 / 4.0)
    assert an.outside_share({**server, "steal_s": None}, 2) == pytest.approx(0.1 / 4.0)
    old = {"window_s": 2.0, "cpu_s": 1.0, "machine": {"busy_share": 0.75}}  # a block from before
    assert an.outside_share(old, 2, generator_cpu_s=1.0) == pytest.approx(0.25)
    assert an.outside_share(server, None) is None and an.outside_share({"window_s": 0}, 2) is None
