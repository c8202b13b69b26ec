#pragma once
// A high-dynamic-range histogram with exactly HdrHistogram's bucket layout.
//
// Why the exact layout: the counts array maps 1:1 onto HdrHistogram's (C, Java, Python), so a
// histogram recorded here can be written in the standard V2 log encoding and read back by any
// HdrHistogram implementation, and percentiles agree with theirs to the last bucket.
// Values are plain integers (loadbench records microseconds).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace loadbench::stats {

class HdrHistogram {
public:
    // Defaults: 1 us .. 1 hour at 3 significant digits (0.1 % worst-case quantisation).
    static constexpr int64_t kDefaultLowest = 1;
    static constexpr int64_t kDefaultHighest = 3'600'000'000;
    static constexpr int kDefaultSignificantFigures = 3;

    HdrHistogram(int64_t lowest_discernible = kDefaultLowest, int64_t highest_trackable = kDefaultHighest,
                 int significant_figures = kDefaultSignificantFigures);

    // Values above the highest trackable value are clamped to it (and counted), never dropped:
    // a request that took "forever" must still show up in the tail.
    void record(int64_t value, int64_t count = 1) noexcept {
        if (value < 0) value = 0;
        if (value > highest_trackable_) value = highest_trackable_;
        counts_[static_cast<size_t>(index_for(value))] += count;
        total_count_ += count;
        if (value < min_) min_ = value;
        if (value > max_) max_ = value;
    }

    // Adds another histogram with the same layout (throws std::invalid_argument otherwise).
    void add(const HdrHistogram& other);
    void reset() noexcept;

    int64_t total_count() const noexcept { return total_count_; }
    // Exact smallest / largest recorded value (0 when empty).
    int64_t min() const noexcept { return total_count_ ? min_ : 0; }
    int64_t max() const noexcept { return total_count_ ? max_ : 0; }
    double mean() const noexcept;
    double stdev() const noexcept;
    // HdrHistogram semantics: the highest value equivalent to the bucket holding the
    // ceil(p% of count)-th value (p = 0 gives the lowest equivalent value of the first bucket).
    int64_t value_at_percentile(double percentile) const noexcept;

    // Layout, exactly as HdrHistogram computes it.
    int64_t lowest_discernible() const noexcept { return lowest_discernible_; }
    int64_t highest_trackable() const noexcept { return highest_trackable_; }
    int significant_figures() const noexcept { return significant_figures_; }
    int counts_length() const noexcept { return counts_len_; }
    const std::vector<int64_t>& counts() const noexcept { return counts_; }
    std::vector<int64_t>& mutable_counts() noexcept { return counts_; }
    // Recomputes total/min/max after counts were written directly (e.g. from a sparse copy).
    void recompute_totals() noexcept;

    int index_for(int64_t value) const noexcept {
        const int bucket = bucket_index(value);
        const int sub_bucket = static_cast<int>(value >> (bucket + unit_magnitude_));
        return ((bucket + 1) << sub_bucket_half_count_magnitude_) + (sub_bucket - sub_bucket_half_count_);
    }
    int64_t value_at_index(int index) const noexcept;
    int64_t lowest_equivalent(int64_t value) const noexcept;
    int64_t highest_equivalent(int64_t value) const noexcept;
    int64_t median_equivalent(int64_t value) const noexcept;
    int64_t equivalent_range(int64_t value) const noexcept;

private:
    int bucket_index(int64_t value) const noexcept {
        const int pow2_ceiling = 64 - std::countl_zero(static_cast<uint64_t>(value | sub_bucket_mask_));
        return pow2_ceiling - unit_magnitude_ - (sub_bucket_half_count_magnitude_ + 1);
    }

    int64_t lowest_discernible_;
    int64_t highest_trackable_;
    int significant_figures_;
    int unit_magnitude_;
    int sub_bucket_half_count_magnitude_;
    int sub_bucket_count_;
    int sub_bucket_half_count_;
    int64_t sub_bucket_mask_;
    int bucket_count_;
    int counts_len_;
    std::vector<int64_t> counts_;
    int64_t total_count_ = 0;
    int64_t min_ = INT64_MAX;
    int64_t max_ = 0;
};

}  // namespace loadbench::stats
