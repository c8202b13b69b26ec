// Open-loop schedules: exact constant spacing across workers, Poisson gaps with the right
// mean and a coefficient of variation near 1, reproducible from the seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/generator/schedule.hpp"

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
