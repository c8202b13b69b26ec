#pragma once
// Open-loop arrival schedules: when each request is *intended* to go out. Latency is measured
// from that intended time (coordinated-omission correction, as in wrk2), so a stalled server
// is charged for every request that should have been sent while it stalled.
#include <cmath>
#include <cstdint>
#include <random>

namespace loadbench::generator {

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

    int64_t next() const noexcept { return next_ns_; }

    void advance() noexcept {
        ++index_;
        if (kind_ == Kind::Constant) {
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

    Kind kind_;
    double gap_ns_;
    int64_t start_ns_;
    double phase_;
    std::mt19937_64 rng_;
    int64_t index_ = 0;
    int64_t next_ns_ = 0;
    double poisson_ns_ = 0.0;
};

}  // namespace loadbench::generator
