#include "core/stats/timeline.hpp"

#include <algorithm>
#include <map>

namespace loadbench::stats {

void IntervalRecorder::roll(int64_t next_interval) {
    flush();
    current_ = next_interval;
}

void IntervalRecorder::flush() {
    if (current_ < 0 || (responses_ == 0 && errors_ == 0)) {
        current_ = -1;
        return;
    }
    IntervalSnapshot snap;
    snap.index = current_;
    snap.responses = responses_;
    snap.errors = errors_;
    if (histogram_.total_count()) {
        auto& counts = histogram_.mutable_counts();
        for (size_t i = 0; i < counts.size(); ++i) {
            if (counts[i]) {
                snap.latency.emplace_back(static_cast<int32_t>(i), counts[i]);
                counts[i] = 0;
            }
        }
        histogram_.recompute_totals();  // all zero now: cheap way to clear totals too
    }
    snapshots_.push_back(std::move(snap));
    responses_ = errors_ = 0;
    current_ = -1;
}

std::vector<TimelineRow> merge_timeline(const std::vector<std::vector<IntervalSnapshot>>& per_worker,
                                        int64_t interval_count) {
    std::map<int64_t, std::vector<const IntervalSnapshot*>> by_interval;
    for (const auto& worker : per_worker)
        for (const auto& snap : worker) by_interval[snap.index].push_back(&snap);

    std::vector<TimelineRow> rows;
    rows.reserve(static_cast<size_t>(std::max<int64_t>(interval_count, 0)));
    HdrHistogram merged;
    for (int64_t i = 0; i < interval_count; ++i) {
        TimelineRow row;
        row.index = i;
        auto it = by_interval.find(i);
        if (it != by_interval.end()) {
            auto& counts = merged.mutable_counts();
            for (const IntervalSnapshot* snap : it->second) {
                row.responses += snap->responses;
                row.errors += snap->errors;
                for (const auto& [index, count] : snap->latency) counts[static_cast<size_t>(index)] += count;
            }
            for (size_t k = 0; k < counts.size(); ++k)
                if (counts[k]) row.latency.emplace_back(static_cast<int32_t>(k), counts[k]);
            merged.recompute_totals();
            row.p50_us = merged.value_at_percentile(50.0);
            row.p99_us = merged.value_at_percentile(99.0);
            merged.reset();
        }
        rows.push_back(row);
    }
    return rows;
}

}  // namespace loadbench::stats
