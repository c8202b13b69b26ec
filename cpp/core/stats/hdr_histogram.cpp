#include "core/stats/hdr_histogram.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace loadbench::stats {

HdrHistogram::HdrHistogram(int64_t lowest_discernible, int64_t highest_trackable, int significant_figures)
    : lowest_discernible_(lowest_discernible),
      highest_trackable_(highest_trackable),
      significant_figures_(significant_figures) {
    if (lowest_discernible < 1) throw std::invalid_argument("HdrHistogram: lowest discernible value must be >= 1");
    if (significant_figures < 1 || significant_figures > 5)
        throw std::invalid_argument("HdrHistogram: significant figures must be in 1..5");
    if (highest_trackable < 2 * lowest_discernible)
        throw std::invalid_argument("HdrHistogram: highest trackable value must be >= 2 x lowest");

    // The same arithmetic as hdr_calculate_bucket_config() in HdrHistogram_c.
    const int64_t largest_single_unit_resolution = 2 * static_cast<int64_t>(std::pow(10, significant_figures));
    const int sub_bucket_count_magnitude =
        static_cast<int>(std::ceil(std::log2(static_cast<double>(largest_single_unit_resolution))));
    sub_bucket_half_count_magnitude_ = (sub_bucket_count_magnitude > 1 ? sub_bucket_count_magnitude : 1) - 1;
    unit_magnitude_ = static_cast<int>(std::floor(std::log2(static_cast<double>(lowest_discernible))));
    sub_bucket_count_ = 1 << (sub_bucket_half_count_magnitude_ + 1);
    sub_bucket_half_count_ = sub_bucket_count_ / 2;
    sub_bucket_mask_ = (static_cast<int64_t>(sub_bucket_count_) - 1) << unit_magnitude_;

    int64_t smallest_untrackable = static_cast<int64_t>(sub_bucket_count_) << unit_magnitude_;
    int buckets_needed = 1;
    while (smallest_untrackable <= highest_trackable) {
        if (smallest_untrackable > INT64_MAX / 2) {
            ++buckets_needed;
            break;
        }
        smallest_untrackable <<= 1;
        ++buckets_needed;
    }
    bucket_count_ = buckets_needed;
    counts_len_ = (bucket_count_ + 1) * (sub_bucket_count_ / 2);
    counts_.assign(static_cast<size_t>(counts_len_), 0);
}

void HdrHistogram::add(const HdrHistogram& other) {
    if (other.counts_len_ != counts_len_ || other.lowest_discernible_ != lowest_discernible_ ||
        other.significant_figures_ != significant_figures_)
        throw std::invalid_argument("HdrHistogram::add: histograms have different layouts");
    if (other.total_count_ == 0) return;
    for (int i = 0; i < counts_len_; ++i) counts_[static_cast<size_t>(i)] += other.counts_[static_cast<size_t>(i)];
    total_count_ += other.total_count_;
    if (other.min_ < min_) min_ = other.min_;
    if (other.max_ > max_) max_ = other.max_;
}

void HdrHistogram::reset() noexcept {
    std::fill(counts_.begin(), counts_.end(), 0);
    total_count_ = 0;
    min_ = INT64_MAX;
    max_ = 0;
}

void HdrHistogram::recompute_totals() noexcept {
    total_count_ = 0;
    min_ = INT64_MAX;
    max_ = 0;
    for (int i = 0; i < counts_len_; ++i) {
        const int64_t c = counts_[static_cast<size_t>(i)];
        if (!c) continue;
        total_count_ += c;
        const int64_t v = value_at_index(i);
        if (v < min_) min_ = v;
        const int64_t hi = highest_equivalent(v);
        if (hi > max_) max_ = hi;
    }
}

int64_t HdrHistogram::value_at_index(int index) const noexcept {
    int bucket = (index >> sub_bucket_half_count_magnitude_) - 1;
    int sub_bucket = (index & (sub_bucket_half_count_ - 1)) + sub_bucket_half_count_;
    if (bucket < 0) {
        sub_bucket -= sub_bucket_half_count_;
        bucket = 0;
    }
    return static_cast<int64_t>(sub_bucket) << (bucket + unit_magnitude_);
}

int64_t HdrHistogram::equivalent_range(int64_t value) const noexcept {
    const int bucket = bucket_index(value);
    const int sub_bucket = static_cast<int>(value >> (bucket + unit_magnitude_));
    const int adjusted = sub_bucket >= sub_bucket_count_ ? bucket + 1 : bucket;
    return int64_t{1} << (unit_magnitude_ + adjusted);
}

int64_t HdrHistogram::lowest_equivalent(int64_t value) const noexcept {
    const int bucket = bucket_index(value);
    const int sub_bucket = static_cast<int>(value >> (bucket + unit_magnitude_));
    return static_cast<int64_t>(sub_bucket) << (bucket + unit_magnitude_);
}

int64_t HdrHistogram::highest_equivalent(int64_t value) const noexcept {
    return lowest_equivalent(value) + equivalent_range(value) - 1;
}

int64_t HdrHistogram::median_equivalent(int64_t value) const noexcept {
    return lowest_equivalent(value) + (equivalent_range(value) >> 1);
}

double HdrHistogram::mean() const noexcept {
    if (!total_count_) return 0.0;
    double total = 0.0;
    for (int i = 0; i < counts_len_; ++i) {
        const int64_t c = counts_[static_cast<size_t>(i)];
        if (c) total += static_cast<double>(c) * static_cast<double>(median_equivalent(value_at_index(i)));
    }
    return total / static_cast<double>(total_count_);
}

double HdrHistogram::stdev() const noexcept {
    if (!total_count_) return 0.0;
    const double m = mean();
    double total = 0.0;
    for (int i = 0; i < counts_len_; ++i) {
        const int64_t c = counts_[static_cast<size_t>(i)];
        if (!c) continue;
        const double dev = static_cast<double>(median_equivalent(value_at_index(i))) - m;
        total += dev * dev * static_cast<double>(c);
    }
    return std::sqrt(total / static_cast<double>(total_count_));
}

int64_t HdrHistogram::value_at_percentile(double percentile) const noexcept {
    if (!total_count_) return 0;
    const double requested = percentile < 100.0 ? percentile : 100.0;
    int64_t target = static_cast<int64_t>(requested * static_cast<double>(total_count_) / 100.0 + 0.5);
    if (target < 1) target = 1;
    int64_t seen = 0;
    for (int i = 0; i < counts_len_; ++i) {
        seen += counts_[static_cast<size_t>(i)];
        if (seen >= target) {
            const int64_t v = value_at_index(i);
            return percentile > 0.0 ? highest_equivalent(v) : lowest_equivalent(v);
        }
    }
    return 0;
}

}  // namespace loadbench::stats
