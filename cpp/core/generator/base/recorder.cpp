#include "core/generator/base/recorder.hpp"

namespace loadbench::generator {

namespace {
int64_t to_us(int64_t ns) noexcept { return ns > 0 ? (ns + 500) / 1000 : 0; }
}  // namespace

void Recorder::due(const Request& r, int64_t now) noexcept {
    if (!r.counted) return;
    ++m_.due;
    m_.loop_lateness_us.record(to_us(now - r.intended_ns));
    if (last_due_ns_ != 0) ++m_.due_gaps[gap_bucket(r.intended_ns - last_due_ns_)];
    last_due_ns_ = r.intended_ns;
    if (StageMeasurements* s = stage_of(r)) ++s->due;
}

void Recorder::sent(Request& r, int64_t now) noexcept {
    if (!plan_.open_loop || !r.counted || r.send_recorded) return;
    r.send_recorded = true;
    const int64_t late_ns = now - r.intended_ns;
    m_.lateness_us.record(to_us(late_ns));
    ++m_.sends;
    if (last_sent_ns_ != 0) ++m_.send_gaps[gap_bucket(now - last_sent_ns_)];
    last_sent_ns_ = now;
    if (late_ns > kLateSendNs) ++m_.late_sends;
    if (StageMeasurements* s = stage_of(r)) ++s->sends;
}

void Recorder::response(const Request& r, int status, int64_t now) noexcept {
    live_.completed.store(++completed_total_, std::memory_order_relaxed);
    if (!r.counted) return;
    const int64_t latency_us = to_us(now - r.intended_ns);
    m_.latency_us.record(latency_us);
    if (plan_.open_loop) m_.latency_uncorrected_us.record(to_us(now - r.sent_ns));
    if (r.written_ns != 0 && r.first_byte_ns != 0) {
        m_.phases_us[kPhase_write].record(to_us(r.written_ns - r.sent_ns));
        // a server may answer before the request's last byte (an early error): no wait, then
        m_.phases_us[kPhase_ttfb].record(to_us(r.first_byte_ns - r.written_ns));
        m_.phases_us[kPhase_transfer].record(to_us(now - r.first_byte_ns));
    }
    ++m_.status_codes[static_cast<size_t>(status >= 0 && status < 1000 ? status : 999)];
    ++m_.responses;
    timeline_.record_response(interval_of(now), latency_us);
    if (StageMeasurements* s = stage_of(r)) {
        s->latency_us.record(latency_us);
        ++s->responses;
    }
    last_outcome_ns_ = now;
    live_.responses.store(m_.responses, std::memory_order_relaxed);
}

void Recorder::connection_phase(Phase phase, bool counted, int64_t ns) noexcept {
    if (counted) m_.phases_us[phase].record(to_us(ns));
}

void Recorder::error(const Request& r, ErrorKind kind, const std::string& why, int64_t now) {
    if (!r.counted) return;
    ++m_.errors[kind];
    if (m_.first_error.empty()) m_.first_error = why;
    timeline_.record_error(interval_of(now));
    if (StageMeasurements* s = stage_of(r)) ++s->errors;
    last_outcome_ns_ = now;
    live_.errors.store(++error_total_, std::memory_order_relaxed);
}

void Recorder::note_error(const std::string& why, int64_t now) {
    if (m_.first_error.empty() && now >= plan_.window_start_ns) m_.first_error = why;
}

void Recorder::unfinished(const Request& r, int64_t now) noexcept {
    if (!r.counted) return;
    ++m_.unfinished;
    if (plan_.open_loop) m_.latency_us.record(to_us(now - r.intended_ns));
    if (StageMeasurements* s = stage_of(r)) {
        ++s->unfinished;
        s->latency_us.record(to_us(now - r.intended_ns));  // as in the run's corrected histogram
    }
}

}  // namespace loadbench::generator
