#pragma once
// Open-loop arrival schedules: when each request is *intended* to go out. Latency is measured
// from that intended time (coordinated-omission correction, as in wrk2), so a stalled server
// is charged for every request that should have been sent while it stalled.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace loadbench::generator {

// A load shape (--rate-schedule, --steps): the run's total rate, piecewise linear between
// points (seconds from the measured window's start, requests per second); or the closed loop's
// active connections (--connections-schedule), the same way. Two points at one time
// are an instant step. Time 0 is the window's start; the warm-up before it runs at the first
// point's rate; the window ends at the last point. Built once from checked points (the engine's
// validate), shared read-only by the workers.
class RateCurve {
public:
    struct Segment {
        double t0_s, t1_s;  // from the window's start (the warm-up's segment is negative)
        double r0, r1;      // requests per second at its ends, all workers together
        double cum0, cum1;  // requests due from the run's start to its ends (the rate's integral)
    };

    RateCurve() = default;
    RateCurve(const std::vector<std::pair<double, double>>& points, double warmup_s) {
        double cum = 0.0;
        if (warmup_s > 0.0 && !points.empty()) add(-warmup_s, 0.0, points.front().second, points.front().second, cum);
        for (size_t i = 1; i < points.size(); ++i) {
            const auto& [t0, r0] = points[i - 1];
            const auto& [t1, r1] = points[i];
            if (t1 > t0) add(t0, t1, r0, r1, cum);
        }
    }

    bool empty() const noexcept { return segments_.empty(); }
    const std::vector<Segment>& segments() const noexcept { return segments_; }
    // Requests due over the whole curve (warm-up included).
    double total() const noexcept { return segments_.empty() ? 0.0 : segments_.back().cum1; }

    // The rate's integral from the run's start to `t_s` (seconds from the window's start).
    double integral_to(double t_s) const noexcept {
        double out = 0.0;
        for (const auto& s : segments_) {
            if (t_s >= s.t1_s) {
                out = s.cum1;
                continue;
            }
            if (t_s > s.t0_s) {
                const double x = t_s - s.t0_s;
                out = s.cum0 + x * (s.r0 + 0.5 * (s.r1 - s.r0) / (s.t1_s - s.t0_s) * x);
            }
            break;
        }
        return out;
    }

    // The curve's value at `t_s` (seconds from the window's start): its first value before the
    // curve, its last after it.
    double value_at(double t_s) const noexcept {
        if (segments_.empty()) return 0.0;
        if (t_s <= segments_.front().t0_s) return segments_.front().r0;
        for (const auto& s : segments_)
            if (t_s < s.t1_s) return s.r0 + (s.r1 - s.r0) * (t_s - s.t0_s) / (s.t1_s - s.t0_s);
        return segments_.back().r1;
    }

    // The first segment at or after `from` whose requests include the `target`-th: the one
    // with cum0 <= target < cum1 (segments at rate 0 hold none), or size() when the curve
    // ends first.
    size_t segment_of(double target, size_t from) const noexcept {
        while (from < segments_.size() && segments_[from].cum1 <= target) ++from;
        return from;
    }

    // Where in segment `s` (seconds after its start) its integral reaches `y` (0 <= y < its
    // area), and the rate there: the root of r0 x + slope x^2 / 2 = y, in the form that loses no
    // precision when the slope is tiny or negative, or the rate starts at 0.
    static std::pair<double, double> solve(const Segment& s, double y) noexcept {
        if (!(y > 0.0)) return {0.0, s.r0};
        const double slope = (s.r1 - s.r0) / (s.t1_s - s.t0_s);
        const double root = std::sqrt(std::max(0.0, s.r0 * s.r0 + 2.0 * slope * y));
        const double x = std::min(2.0 * y / (s.r0 + root), s.t1_s - s.t0_s);
        return {x, root};  // the rate at x is sqrt(r0^2 + 2 slope y)
    }

private:
    void add(double t0, double t1, double r0, double r1, double& cum) {
        const double area = 0.5 * (r0 + r1) * (t1 - t0);
        segments_.push_back({t0, t1, r0, r1, cum, cum + area});
        cum += area;
    }

    std::vector<Segment> segments_;
};

class ArrivalSchedule {
public:
    enum class Kind { Constant, Poisson };

    // rate_per_s: this schedule's own rate. phase in [0, 1): where in its first gap a constant
    // schedule starts, so T workers at rate R/T each interleave into one even stream of rate R
    // (also when R < T, where integer per-thread rates would round to zero - wrk2's bug).
    ArrivalSchedule(Kind kind, double rate_per_s, int64_t start_ns, double phase, uint64_t seed)
        : kind_(kind), gap_ns_(1e9 / rate_per_s), start_ns_(start_ns), phase_(phase), rng_(seed) {
        next_ns_ = kind_ == Kind::Constant ? start_ns_ + static_cast<int64_t>(phase_ * gap_ns_)
                                           : start_ns_ + static_cast<int64_t>(exponential_gap());
        poisson_ns_ = static_cast<double>(next_ns_);
    }

    // Along a RateCurve (which must outlive it), as worker `worker` of `workers`: its k-th
    // arrival is where the curve's integral reaches k * workers + worker (an integer, so the
    // workers' constant arrivals interleave exactly into the one stream the curve describes);
    // Poisson: exponential gaps with mean `workers` in that integrated time (a time change of a
    // Poisson process). window_start_ns: the curve's time 0.
    ArrivalSchedule(Kind kind, const RateCurve& curve, int64_t window_start_ns, int worker, int workers, uint64_t seed)
        : kind_(kind),
          gap_ns_(0.0),
          start_ns_(window_start_ns),
          phase_(worker),
          rng_(seed),
          curve_(&curve),
          stride_(workers) {
        target_ =
            kind_ == Kind::Constant ? phase_ : -std::log(1.0 - std::generate_canonical<double, 53>(rng_)) * stride_;
        along_curve();
    }

    int64_t next() const noexcept { return next_ns_; }
    // The mean gap between this schedule's arrivals around the next one, in ns (the send batch
    // applies when it is shorter than the batch).
    double gap_ns() const noexcept { return gap_ns_; }

    void advance() noexcept {
        ++index_;
        if (curve_) {
            target_ = kind_ == Kind::Constant
                          ? phase_ + static_cast<double>(index_) * stride_
                          : target_ - std::log(1.0 - std::generate_canonical<double, 53>(rng_)) * stride_;
            along_curve();
        } else if (kind_ == Kind::Constant) {
            // From the start each time (no accumulated rounding drift over millions of sends).
            next_ns_ = start_ns_ + static_cast<int64_t>((phase_ + static_cast<double>(index_)) * gap_ns_);
        } else {
            poisson_ns_ += exponential_gap();
            next_ns_ = static_cast<int64_t>(poisson_ns_);
        }
    }

private:
    double exponential_gap() noexcept {
        // -ln(U) with U in (0, 1]: exponential with mean gap_ns_.
        const double u = 1.0 - std::generate_canonical<double, 53>(rng_);
        return -std::log(u) * gap_ns_;
    }

    // The time where the curve's integral reaches target_: INT64_MAX once the curve has ended.
    void along_curve() noexcept {
        segment_ = curve_->segment_of(target_, segment_);
        if (segment_ == curve_->segments().size()) {
            next_ns_ = INT64_MAX;
            return;
        }
        const RateCurve::Segment& s = curve_->segments()[segment_];
        const auto [x, rate] = RateCurve::solve(s, target_ - s.cum0);
        next_ns_ = start_ns_ + static_cast<int64_t>(std::floor((s.t0_s + x) * 1e9));
        gap_ns_ = rate > 0.0 ? 1e9 * stride_ / rate : INFINITY;
    }

    Kind kind_;
    double gap_ns_;
    int64_t start_ns_;
    double phase_;
    std::mt19937_64 rng_;
    int64_t index_ = 0;
    int64_t next_ns_ = 0;
    double poisson_ns_ = 0.0;
    // Along a curve only:
    const RateCurve* curve_ = nullptr;
    double stride_ = 1.0;
    double target_ = 0.0;
    size_t segment_ = 0;
};

}  // namespace loadbench::generator
