#pragma once
// Per-interval figures (responses, errors, latency percentiles) recorded by one worker
// without locks, merged across workers once the run is over.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/stats/hdr_histogram.hpp"

namespace loadbench::stats {

// One worker's figures for one interval; latency kept sparse (bucket index, count) so a long
// run costs memory per non-empty bucket, not per bucket.
struct IntervalSnapshot {
    int64_t index = 0;
    uint64_t responses = 0;
    uint64_t errors = 0;
    std::vector<std::pair<int32_t, int64_t>> latency;
};

class IntervalRecorder {
public:
    IntervalRecorder() = default;

    void record_response(int64_t interval, int64_t latency_us) noexcept {
        if (interval != current_) roll(interval);
        histogram_.record(latency_us);
        ++responses_;
    }
    void record_error(int64_t interval) noexcept {
        if (interval != current_) roll(interval);
        ++errors_;
    }
    // Closes the open interval; call once when the worker stops.
    void flush();
    std::vector<IntervalSnapshot>& snapshots() noexcept { return snapshots_; }

private:
    void roll(int64_t next_interval);

    HdrHistogram histogram_;
    int64_t current_ = -1;
    uint64_t responses_ = 0;
    uint64_t errors_ = 0;
    std::vector<IntervalSnapshot> snapshots_;
};

struct TimelineRow {
    int64_t index = 0;
    uint64_t responses = 0;
    uint64_t errors = 0;
    int64_t p50_us = 0;
    int64_t p99_us = 0;
    std::vector<std::pair<int32_t, int64_t>> latency;  // merged (bucket index, count), non-empty only
};

// Merges every worker's snapshots into one row per interval 0..interval_count-1 (empty
// intervals included, so a stall shows up as a row of zeros rather than a gap).
std::vector<TimelineRow> merge_timeline(const std::vector<std::vector<IntervalSnapshot>>& per_worker,
                                        int64_t interval_count);

}  // namespace loadbench::stats
