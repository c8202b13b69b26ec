// Open-loop schedules: exact constant spacing across workers, Poisson gaps with the right
// mean and a coefficient of variation near 1, reproducible from the seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/generator/base/schedule.hpp"

using loadbench::generator::ArrivalSchedule;

TEST(ArrivalSchedule, ConstantWorkersInterleaveIntoOneEvenStream) {
    // 4 workers sharing 1000 req/s: each at 250 req/s, phases 0, 1/4, 2/4, 3/4.
    std::vector<int64_t> all;
    for (int w = 0; w < 4; ++w) {
        ArrivalSchedule s(ArrivalSchedule::Kind::Constant, 250.0, 0, w / 4.0, 1);
        for (int k = 0; k < 250; ++k, s.advance()) all.push_back(s.next());
    }
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i < all.size(); ++i) EXPECT_NEAR(all[i], static_cast<int64_t>(i) * 1'000'000, 1) << i;
}

TEST(ArrivalSchedule, RateBelowThreadCountIsHonoured) {
    // 2 req/s over 4 workers: 0.5 req/s each; within 2 s exactly 4 sends, 0.5 s apart.
    std::vector<int64_t> in_window;
    for (int w = 0; w < 4; ++w) {
        ArrivalSchedule s(ArrivalSchedule::Kind::Constant, 0.5, 0, w / 4.0, 1);
        for (; s.next() < 2'000'000'000; s.advance()) in_window.push_back(s.next());
    }
    std::sort(in_window.begin(), in_window.end());
    ASSERT_EQ(in_window.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(in_window[i], static_cast<int64_t>(i) * 500'000'000);
}

TEST(ArrivalSchedule, PoissonGapsHaveTheRightMeanAndCv) {
    ArrivalSchedule s(ArrivalSchedule::Kind::Poisson, 10'000.0, 0, 0.0, 42);
    const int n = 200'000;
    std::vector<double> gaps;
    int64_t last = 0;
    for (int i = 0; i < n; ++i, s.advance()) {
        gaps.push_back(static_cast<double>(s.next() - last));
        last = s.next();
    }
    double mean = 0;
    for (double g : gaps) mean += g;
    mean /= n;
    double var = 0;
    for (double g : gaps) var += (g - mean) * (g - mean);
    const double cv = std::sqrt(var / n) / mean;
    EXPECT_NEAR(mean, 100'000.0, 1'000.0);  // 100 us +- 1 %
    EXPECT_NEAR(cv, 1.0, 0.02);
    // same seed, same schedule
    ArrivalSchedule a(ArrivalSchedule::Kind::Poisson, 100.0, 0, 0.0, 7),
        b(ArrivalSchedule::Kind::Poisson, 100.0, 0, 0.0, 7);
    for (int i = 0; i < 100; ++i, a.advance(), b.advance()) ASSERT_EQ(a.next(), b.next());
}

// -- Load shapes: arrivals along a piecewise-linear rate (RateCurve) ---------------------------

using loadbench::generator::RateCurve;

namespace {

// Every arrival of `workers` constant schedules along `curve`, sorted (ns from the window start).
std::vector<int64_t> along(const RateCurve& curve, int workers,
                           ArrivalSchedule::Kind kind = ArrivalSchedule::Kind::Constant) {
    std::vector<int64_t> all;
    for (int w = 0; w < workers; ++w) {
        ArrivalSchedule s(kind, curve, 0, w, workers, 1 + w);
        for (; s.next() != INT64_MAX; s.advance()) all.push_back(s.next());
    }
    std::sort(all.begin(), all.end());
    return all;
}

int64_t count_in(const std::vector<int64_t>& times, int64_t from_ns, int64_t to_ns) {
    return std::count_if(times.begin(), times.end(), [&](int64_t t) { return t >= from_ns && t < to_ns; });
}

}  // namespace

TEST(RateCurve, ArrivalsOnARampAreWhereItsIntegralReachesEachCount) {
    // 0 -> 2000 req/s over 3 s: rate 2000/3 t, integral 1000/3 t^2, so the k-th arrival is at
    // sqrt(3k/1000) s; 3000 in all.
    const RateCurve curve({{0.0, 0.0}, {3.0, 2000.0}}, 0.0);
    EXPECT_DOUBLE_EQ(curve.total(), 3000.0);
    const auto times = along(curve, 1);
    ASSERT_EQ(times.size(), 3000u);
    for (size_t k = 0; k < times.size(); ++k)
        ASSERT_NEAR(times[k], std::sqrt(3.0 * static_cast<double>(k) / 1000.0) * 1e9, 2.0) << k;
}

TEST(RateCurve, WorkersInterleaveIntoTheOneStreamOfTheCurve) {
    // 500 -> 2000 req/s over 3 s, then down to 0 at 4 s: four workers together send what one
    // would, arrival for arrival.
    const RateCurve curve({{0.0, 500.0}, {3.0, 2000.0}, {4.0, 0.0}}, 0.0);
    EXPECT_DOUBLE_EQ(curve.total(), 3750.0 + 1000.0);
    const auto one = along(curve, 1), four = along(curve, 4);
    ASSERT_EQ(one.size(), 4750u);
    ASSERT_EQ(four.size(), one.size());
    for (size_t i = 0; i < one.size(); ++i) ASSERT_NEAR(four[i], one[i], 2) << i;
    // every half second holds the curve's integral over it (+-1)
    for (int64_t from = 0; from < 4'000'000'000; from += 500'000'000) {
        const double expected = curve.integral_to((from + 500'000'000) * 1e-9) - curve.integral_to(from * 1e-9);
        EXPECT_NEAR(static_cast<double>(count_in(four, from, from + 500'000'000)), expected, 1.0) << from;
    }
}

TEST(RateCurve, ARateOfZeroSendsNothingAndStepsAreFlat) {
    // steps 1000/s for 1 s, 0 for 1 s, 3000/s for 1 s (two points at one time: an instant step)
    const RateCurve curve({{0.0, 1000.0}, {1.0, 1000.0}, {1.0, 0.0}, {2.0, 0.0}, {2.0, 3000.0}, {3.0, 3000.0}}, 0.0);
    const auto times = along(curve, 3);
    EXPECT_EQ(count_in(times, 0, 1'000'000'000), 1000);
    EXPECT_EQ(count_in(times, 1'000'000'000, 2'000'000'000), 0);
    EXPECT_EQ(count_in(times, 2'000'000'000, 3'000'000'000), 3000);
    EXPECT_EQ(times.size(), 4000u);
    // flat: evenly spaced within each step (1 ms, then 1/3 ms apart)
    for (size_t i = 1; i < 1000; ++i) ASSERT_NEAR(times[i] - times[i - 1], 1'000'000, 2) << i;
    for (size_t i = 1001; i < 4000; ++i) ASSERT_NEAR(times[i] - times[i - 1], 333'333, 2) << i;
}

TEST(RateCurve, TheWarmUpRunsAtTheFirstRateAndTheCurveEnds) {
    const RateCurve curve({{0.0, 1000.0}, {2.0, 3000.0}}, 0.5);
    EXPECT_DOUBLE_EQ(curve.integral_to(0.0), 500.0);
    EXPECT_DOUBLE_EQ(curve.total(), 500.0 + 4000.0);
    const auto times = along(curve, 2);
    EXPECT_EQ(count_in(times, -500'000'000, 0), 500);
    EXPECT_EQ(count_in(times, 0, 2'000'000'000), 4000);
    EXPECT_LT(times.back(), 2'000'000'000);  // nothing after the last point
}

TEST(RateCurve, TheGapFollowsTheRateForTheSendBatch) {
    const RateCurve curve({{0.0, 100.0}, {10.0, 100'000.0}}, 0.0);
    ArrivalSchedule s(ArrivalSchedule::Kind::Constant, curve, 0, 0, 2, 1);
    EXPECT_NEAR(s.gap_ns(), 2e9 / 100.0, 2e9 / 100.0 * 0.01);  // two workers: each at half the rate
    while (s.next() < 9'000'000'000) s.advance();
    const double rate_at = 100.0 + (100'000.0 - 100.0) * static_cast<double>(s.next()) * 1e-10;
    EXPECT_NEAR(s.gap_ns(), 2e9 / rate_at, 2e9 / rate_at * 1e-3);
}

TEST(RateCurve, PoissonArrivalsFollowTheCurveInIntegratedTime) {
    // Poisson along 0 -> 20000 req/s over 2 s: 20000 arrivals expected, a quarter in the first
    // second; counts within 4 standard deviations (sqrt of the mean).
    const RateCurve curve({{0.0, 0.0}, {2.0, 20'000.0}}, 0.0);
    const auto times = along(curve, 2, ArrivalSchedule::Kind::Poisson);
    EXPECT_NEAR(static_cast<double>(times.size()), 20'000.0, 4 * std::sqrt(20'000.0));
    EXPECT_NEAR(static_cast<double>(count_in(times, 0, 1'000'000'000)), 5'000.0, 4 * std::sqrt(5'000.0));
    EXPECT_LT(times.back(), 2'000'000'000);
}

TEST(RateCurve, ValueAtFollowsTheConnectionsScheduleWithItsEndsHeld) {
    // --connections-schedule '0s:2, 1s:2, 1s:8, 3s:0' with a 0.5 s warm-up
    const RateCurve curve({{0.0, 2.0}, {1.0, 2.0}, {1.0, 8.0}, {3.0, 0.0}}, 0.5);
    EXPECT_DOUBLE_EQ(curve.value_at(-2.0), 2.0);  // before the warm-up: the first count
    EXPECT_DOUBLE_EQ(curve.value_at(-0.25), 2.0);
    EXPECT_DOUBLE_EQ(curve.value_at(0.5), 2.0);
    EXPECT_DOUBLE_EQ(curve.value_at(1.0), 8.0);  // the step
    EXPECT_DOUBLE_EQ(curve.value_at(2.0), 4.0);
    EXPECT_DOUBLE_EQ(curve.value_at(5.0), 0.0);  // after the end: the last
}
