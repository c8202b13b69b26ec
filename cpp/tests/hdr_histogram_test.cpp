// The histogram must agree with a sorted brute-force list to within its stated precision, and
// merging must equal recording the union.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/stats/hdr_histogram.hpp"
#include "core/stats/timeline.hpp"

using loadbench::stats::HdrHistogram;

namespace {

// The value HdrHistogram reports for percentile p: the highest value equivalent to the
// ceil-rank sample of the sorted data.
int64_t brute_force_percentile(const HdrHistogram& layout, std::vector<int64_t> sorted, double p) {
    int64_t rank = static_cast<int64_t>(p * static_cast<double>(sorted.size()) / 100.0 + 0.5);
    rank = std::max<int64_t>(rank, 1);
    return layout.highest_equivalent(sorted[static_cast<size_t>(rank - 1)]);
}

std::vector<int64_t> random_latencies(size_t n, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> dist(std::log(2000.0), 1.2);
    std::vector<int64_t> out;
    for (size_t i = 0; i < n; ++i) out.push_back(static_cast<int64_t>(dist(rng)));
    return out;
}

}  // namespace

TEST(HdrHistogram, LayoutMatchesHdrHistogramForMicrosecondsToOneHour) {
    HdrHistogram h(1, 3'600'000'000, 3);
    // Same numbers HdrHistogram_c computes: 2048 sub-buckets, 22 buckets, 23552 counts.
    EXPECT_EQ(h.counts_length(), 23552);
    EXPECT_EQ(h.index_for(0), 0);
    EXPECT_EQ(h.index_for(2047), 2047);
    EXPECT_EQ(h.index_for(2048), 2048);
    EXPECT_EQ(h.index_for(2049), 2048);  // from 2048 on, buckets are 2 wide
    EXPECT_EQ(h.value_at_index(2048), 2048);
    EXPECT_EQ(h.highest_equivalent(2048), 2049);
    EXPECT_EQ(h.lowest_equivalent(1'000'123), 1'000'000 - 1'000'000 % 512);
}

TEST(HdrHistogram, PercentilesMatchSortedBruteForce) {
    for (unsigned seed : {1u, 2u, 3u}) {
        auto values = random_latencies(20000, seed);
        HdrHistogram h;
        for (auto v : values) h.record(v);
        std::sort(values.begin(), values.end());
        for (double p : {0.1, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
            const int64_t expected = brute_force_percentile(h, values, p);
            EXPECT_EQ(h.value_at_percentile(p), expected) << "p" << p << " seed " << seed;
            // and the reported value is within 0.1 % of the true sample
            const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(p * values.size() / 100.0 + 0.5));
            const double truth = static_cast<double>(values[static_cast<size_t>(rank - 1)]);
            EXPECT_LE(std::abs(static_cast<double>(h.value_at_percentile(p)) - truth), truth * 0.001 + 1.0);
        }
        EXPECT_EQ(h.min(), values.front());
        EXPECT_EQ(h.max(), values.back());
        EXPECT_EQ(h.total_count(), static_cast<int64_t>(values.size()));
        double mean = 0;
        for (auto v : values) mean += static_cast<double>(v);
        mean /= static_cast<double>(values.size());
        EXPECT_NEAR(h.mean(), mean, mean * 0.001);
    }
}

TEST(HdrHistogram, MergeEqualsHistogramOfUnion) {
    auto a = random_latencies(5000, 7);
    auto b = random_latencies(7000, 8);
    HdrHistogram ha, hb, hu;
    for (auto v : a) {
        ha.record(v);
        hu.record(v);
    }
    for (auto v : b) {
        hb.record(v);
        hu.record(v);
    }
    ha.add(hb);
    EXPECT_EQ(ha.counts(), hu.counts());
    EXPECT_EQ(ha.total_count(), hu.total_count());
    EXPECT_EQ(ha.min(), hu.min());
    EXPECT_EQ(ha.max(), hu.max());
    EXPECT_EQ(ha.value_at_percentile(99.9), hu.value_at_percentile(99.9));
}

TEST(HdrHistogram, ValuesAboveRangeAreClampedNotDropped) {
    HdrHistogram h(1, 100'000'000, 3);
    h.record(5'000'000'000);
    h.record(-3);
    EXPECT_EQ(h.total_count(), 2);
    EXPECT_EQ(h.max(), 100'000'000);
    EXPECT_EQ(h.min(), 0);
}

TEST(HdrHistogram, EmptyHistogramReportsZeros) {
    HdrHistogram h;
    EXPECT_EQ(h.value_at_percentile(50), 0);
    EXPECT_EQ(h.min(), 0);
    EXPECT_EQ(h.max(), 0);
    EXPECT_EQ(h.mean(), 0.0);
}

TEST(Timeline, MergesWorkersPerIntervalWithGapsAsZeroRows) {
    loadbench::stats::IntervalRecorder w1, w2;
    for (int i = 0; i < 100; ++i) w1.record_response(0, 1000);
    for (int i = 0; i < 100; ++i) w2.record_response(0, 3000);
    w2.record_error(0);
    w1.record_response(2, 500);
    w1.flush();
    w2.flush();
    auto rows = loadbench::stats::merge_timeline({w1.snapshots(), w2.snapshots()}, 3);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].responses, 200u);
    EXPECT_EQ(rows[0].errors, 1u);
    EXPECT_EQ(rows[0].p50_us, 1000);
    EXPECT_EQ(rows[0].p99_us, 3001);  // highest value equivalent to 3000 (2 us buckets)
    EXPECT_EQ(rows[1].responses, 0u);
    EXPECT_EQ(rows[2].responses, 1u);
    EXPECT_EQ(rows[2].p50_us, 500);
}
