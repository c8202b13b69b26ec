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


# -- what a figure proves: bounds closed by the CPU ceiling, and the repeats' noise ------------


def test_a_ceiling_below_another_measured_figure_proves_the_order():
    """The issue's shape: nginx a lower bound of 149 410 whose server CPU caps it at ~106 000,
    against beast's exact 153 033: the order is certain, though nginx's figure is a bound."""
    nginx = an.Figure(105_345, "lower", interval=(105_345, 1e6 / 9.40))
    beast = an.Figure(153_033)
    assert nginx.ceiling == pytest.approx(106_383, abs=1)
    assert an.certainly_better(beast, nginx, higher_is_better=True)
    assert an.compare(beast, nginx, True) == "better" and an.compare(nginx, beast, True) == "worse"
    # without the ceiling the bound may hide anything above it: the order is open
    open_bound = an.Figure(105_345, "lower")
    assert an.compare(beast, open_bound, True) == "open"
    ranks = an.certain_ranks({"beast": beast, "nginx": nginx}, higher_is_better=True)
    assert (ranks["beast"].text(), ranks["nginx"].text()) == ("1", "2")


def test_two_bounds_whose_intervals_do_not_overlap_are_ordered():
    a = an.Figure(300_000, "lower", interval=(300_000, 320_000))
    b = an.Figure(150_000, "lower", interval=(150_000, 160_000))
    assert an.compare(a, b, True) == "better"
    # a ceiling above the other's lower end leaves it open
    c = an.Figure(150_000, "lower", interval=(150_000, 310_000))
    assert an.compare(a, c, True) == "open"


def test_differences_inside_the_repeats_range_are_noise_not_orders():
    """beast 153 033 (145 989 - 169 318) vs nginx 149 410 (138 288 - 162 223): within noise, ±8 %
    (nginx's half-range, the larger); h2o 83 992 (76 315 - 104 339) is below both beyond noise."""
    beast = an.Figure(153_033, spread=(145_989, 169_318))
    nginx = an.Figure(149_410, spread=(138_288, 162_223))
    h2o = an.Figure(83_992, spread=(76_315, 104_339))
    assert an.compare(beast, nginx, True) == "noise" and not an.clearly_better(beast, nginx, True)
    assert an.certainly_better(beast, nginx, True)  # the medians alone would claim an order
    assert an.pair_noise(beast, nginx) == pytest.approx((162_223 - 138_288) / 2 / 149_410)
    assert an.compare(nginx, h2o, True) == "better"
    ranks = an.certain_ranks({"beast": beast, "nginx": nginx, "h2o": h2o}, higher_is_better=True)
    assert ranks["beast"].text() == "1st-2nd (within noise of nginx)"
    assert ranks["h2o"].text() == "3" and ranks["nginx"].noise == ("beast",)


def test_interval_arithmetic_of_peaks_averages_and_ratios():
    measured = an.Figure(150_000)
    bounded = an.Figure(100_000, "lower", interval=(100_000, 110_000))
    # a § cell whose ceiling lies below the best measured value hides nothing: the peak is exact
    peak = an.figure_max([measured, bounded])
    assert peak == 150_000 and peak.bound is None
    above = an.figure_max([measured, an.Figure(140_000, "lower", interval=(140_000, 180_000))])
    assert above.bound == "lower" and above.ceiling == 180_000
    mean = an.figure_mean([measured, bounded])
    assert mean == 125_000 and mean.bound == "lower" and mean.ceiling == 130_000
    assert (mean.bounded, mean.cells) == (1, 2)
    # a measured value over a bound in [100 000, 110 000]: between 1.36x and 1.5x, at most 1.5x
    ratio = an.figure_ratio(measured, bounded)
    assert ratio == 1.5 and ratio.bound == "upper"
    assert ratio.interval[0] == pytest.approx(150_000 / 110_000)
    assert an.figure_ratio(bounded, bounded).bound == "unknown"


def test_not_steady_is_a_climb_in_run_order_well_above_noise():
    assert an.not_steady([737, 1_019, 3_175])  # pypy-hypercorn's JIT warming up
    assert not an.not_steady([3_175, 1_019, 737])  # falling is not warming
    assert not an.not_steady([100, 110, 120])  # climbing, but within 1.5x
    assert not an.not_steady([100, 300, 250])  # not every repeat above the one before
    assert not an.not_steady([100, 300])  # two repeats say nothing of a trend
    assert an.not_steady([None, 1_000, 1_600, 2_000]) and an.NOT_STEADY_CLIMB == 1.5
