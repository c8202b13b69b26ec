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


def test_starved_threshold_is_half_the_connections():
    assert an.STARVED_FRACTION == 0.5
    assert an.is_starved(24.9, 50)
    assert not an.is_starved(25.0, 50)
    assert not an.is_starved(0.98, 1)
    assert an.is_starved(30, 100, fraction=0.9) and not an.is_starved(95, 100, fraction=0.9)
    with pytest.raises(ValueError):
        an.is_starved(1, 0)


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
