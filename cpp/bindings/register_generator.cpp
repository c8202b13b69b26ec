// Thin binding of the load engine: its config and result structs as classes, field by field
// (def_readwrite / def_readonly), the GIL released around every call into the engine.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings/registry.hpp"
#include "core/config_error.hpp"
#include "core/generator/engine.hpp"

#include <nghttp2/nghttp2.h>

namespace py = pybind11;

namespace loadbench::bindings {

namespace {

using generator::Engine;
using generator::EngineConfig;

// ConfigError becomes ValueError("config: ...") which the Python layer re-raises as
// loadbench.errors.ConfigError (no global exception registration, so parts cannot collide).
template <class F>
auto translating(F&& f) {
    try {
        return f();
    } catch (const ConfigError& e) {
        throw py::value_error(std::string("config: ") + e.what());
    }
}

// A histogram's buckets as a numpy array (a copy: the result outlives nothing).
py::array_t<int64_t> counts_of(const stats::HdrHistogram& h) {
    return py::array_t<int64_t>(static_cast<py::ssize_t>(h.counts().size()), h.counts().data());
}

// The timeline as numpy columns, and each interval's histogram sparse: bucket indexes and
// counts, concatenated, with offsets (what loadbench.Result.interval_histograms() unpacks).
py::dict timeline_columns(const std::vector<stats::TimelineRow>& rows) {
    const size_t n = rows.size();
    py::array_t<int64_t> responses(static_cast<py::ssize_t>(n)), errs(static_cast<py::ssize_t>(n)),
        p50(static_cast<py::ssize_t>(n)), p99(static_cast<py::ssize_t>(n));
    for (size_t i = 0; i < n; ++i) {
        responses.mutable_at(i) = static_cast<int64_t>(rows[i].responses);
        errs.mutable_at(i) = static_cast<int64_t>(rows[i].errors);
        p50.mutable_at(i) = rows[i].p50_us;
        p99.mutable_at(i) = rows[i].p99_us;
    }
    size_t nonzero = 0;
    for (const auto& row : rows) nonzero += row.latency.size();
    py::array_t<int32_t> bucket_index(static_cast<py::ssize_t>(nonzero));
    py::array_t<int64_t> bucket_count(static_cast<py::ssize_t>(nonzero));
    py::array_t<int64_t> offsets(static_cast<py::ssize_t>(n + 1));
    size_t at = 0;
    for (size_t i = 0; i < n; ++i) {
        offsets.mutable_at(i) = static_cast<int64_t>(at);
        for (const auto& [index, count] : rows[i].latency) {
            bucket_index.mutable_at(at) = index;
            bucket_count.mutable_at(at) = count;
            ++at;
        }
    }
    offsets.mutable_at(n) = static_cast<int64_t>(at);
    py::dict timeline;
    timeline["bucket_index"] = bucket_index;
    timeline["bucket_count"] = bucket_count;
    timeline["bucket_offsets"] = offsets;
    timeline["responses"] = responses;
    timeline["errors"] = errs;
    timeline["p50_us"] = p50;
    timeline["p99_us"] = p99;
    return timeline;
}

py::tuple counter_names() {
    py::list names;
#define LOADBENCH_COUNTER_NAME(name, doc) names.append(#name);
    LOADBENCH_COUNTERS(LOADBENCH_COUNTER_NAME)
#undef LOADBENCH_COUNTER_NAME
    return py::tuple(names);
}

// (name, doc) of every phase (LOADBENCH_PHASES), in its order.
py::tuple phase_names() {
    py::list phases;
    for (size_t i = 0; i < generator::kPhases; ++i)
        phases.append(py::make_tuple(generator::kPhaseNames[i], generator::kPhaseDocs[i]));
    return py::tuple(phases);
}

// (name, default, help) of every engine option, in declaration order: the defaults read off a
// default-constructed EngineConfig, so they are the struct's own.
py::tuple engine_options() {
    const EngineConfig defaults;
    py::list options;
#define LOADBENCH_ENGINE_OPTION_ENTRY(type, name, value, help) \
    options.append(py::make_tuple(#name, py::cast(defaults.name), help));
    LOADBENCH_ENGINE_OPTIONS(LOADBENCH_ENGINE_OPTION_ENTRY)
#undef LOADBENCH_ENGINE_OPTION_ENTRY
    return py::tuple(options);
}

}  // namespace

void register_generator(py::module_& m) {
    py::class_<http::RequestTemplate>(m, "RequestTemplate", "One request template: method, target, headers, body")
        .def(py::init<>())
        .def_readwrite("method", &http::RequestTemplate::method)
        .def_readwrite("target", &http::RequestTemplate::target, "empty: the URL's path + query")
        .def_readwrite("headers", &http::RequestTemplate::headers)
        .def_property(
            "body", [](const http::RequestTemplate& r) { return py::bytes(r.body); },
            [](http::RequestTemplate& r, const py::bytes& body) { r.body = body; });

    // What a run is asked to do: the engine's own struct, field by field, and ENGINE_OPTIONS -
    // (name, default, help) per option, in declaration order - from the one declaration
    // (LOADBENCH_ENGINE_OPTIONS in core/generator/base/config.hpp). loadbench.core.options.RunOptions
    // fills the struct and takes its pass-through options' defaults and help from the list.
    py::class_<EngineConfig> config(m, "EngineConfig", "A run's configuration (core/generator/base/config.hpp)");
    config.def(py::init<>());
#define LOADBENCH_BIND_ENGINE_OPTION(type, name, value, help) config.def_readwrite(#name, &EngineConfig::name, help);
    LOADBENCH_ENGINE_OPTIONS(LOADBENCH_BIND_ENGINE_OPTION)
#undef LOADBENCH_BIND_ENGINE_OPTION
    m.attr("ENGINE_OPTIONS") = engine_options();

    py::class_<stats::HdrHistogram>(m, "HdrHistogram", "Latency in microseconds, HdrHistogram's bucket layout")
        .def_property_readonly("counts", &counts_of)
        .def_property_readonly("lowest", &stats::HdrHistogram::lowest_discernible)
        .def_property_readonly("highest", &stats::HdrHistogram::highest_trackable)
        .def_property_readonly("significant_figures", &stats::HdrHistogram::significant_figures)
        .def_property_readonly("min", &stats::HdrHistogram::min)
        .def_property_readonly("max", &stats::HdrHistogram::max);

    // What the run measured: the engine's own structs, read-only.
    auto measurements =
        py::class_<generator::Measurements>(m, "Measurements", "What a run measured (core/generator/base/config.hpp)")
            .def_readonly("latency_us", &generator::Measurements::latency_us)
            .def_readonly("latency_uncorrected_us", &generator::Measurements::latency_uncorrected_us)
            .def_readonly("lateness_us", &generator::Measurements::lateness_us)
            .def_readonly("loop_lateness_us", &generator::Measurements::loop_lateness_us)
            .def_property_readonly("phases_us",
                                   [](const generator::Measurements& t) {
                                       py::dict phases;  // every phase, by name (PHASES' order)
                                       for (size_t i = 0; i < t.phases_us.size(); ++i)
                                           phases[generator::kPhaseNames[i]] = t.phases_us[i];
                                       return phases;
                                   })
            .def_readonly("first_error", &generator::Measurements::first_error)
            .def_readonly("udp_receive_buffer", &generator::Measurements::udp_receive_buffer)
            .def_readonly("udp_send_buffer", &generator::Measurements::udp_send_buffer)
            .def_readonly("udp_gro", &generator::Measurements::udp_gro)
            .def_property_readonly("stages",
                                   [](const generator::Measurements& t) {
                                       py::list stages;  // a load shape's stages, in order: dicts
                                       for (const auto& stage : t.stages) {
                                           py::dict d;
                                           d["latency_us"] = stage.latency_us;
                                           d["due"] = stage.due;
                                           d["sends"] = stage.sends;
                                           d["responses"] = stage.responses;
                                           d["errors"] = stage.errors;
                                           d["unfinished"] = stage.unfinished;
                                           stages.append(d);
                                       }
                                       return stages;
                                   })
            .def_property_readonly(
                "due_gaps",
                [](const generator::Measurements& t) {
                    return std::vector<uint64_t>(t.due_gaps.begin(), t.due_gaps.end());
                },
                "open loop, the schedule audit: gaps between consecutive due times (gap_bucket)")
            .def_property_readonly(
                "send_gaps",
                [](const generator::Measurements& t) {
                    return std::vector<uint64_t>(t.send_gaps.begin(), t.send_gaps.end());
                },
                "open loop, the schedule audit: gaps between consecutive sends (gap_bucket)")
            .def_property_readonly("status_codes",
                                   [](const generator::Measurements& t) {
                                       py::dict codes;  // the codes that occurred
                                       for (size_t code = 0; code < t.status_codes.size(); ++code)
                                           if (t.status_codes[code]) codes[py::int_(code)] = t.status_codes[code];
                                       return codes;
                                   })
            .def_property_readonly("errors",
                                   [](const generator::Measurements& t) {
                                       py::dict errors;  // every kind, by name
                                       for (size_t k = 0; k < t.errors.size(); ++k)
                                           errors[generator::kErrorKindNames[k]] = t.errors[k];
                                       return errors;
                                   })
            .def_property_readonly("streams_reset", [](const generator::Measurements& t) {
                py::dict resets;  // by HTTP/2 error code name
                for (size_t code = 0; code < t.streams_reset.size(); ++code) {
                    if (!t.streams_reset[code]) continue;
                    const char* name = code + 1 < t.streams_reset.size()
                                           ? nghttp2_http2_strerror(static_cast<uint32_t>(code))
                                           : "unknown";
                    resets[name] = t.streams_reset[code];
                }
                return resets;
            });
#define LOADBENCH_BIND_COUNTER(name, doc) measurements.def_readonly(#name, &generator::Measurements::name, doc);
    LOADBENCH_COUNTERS(LOADBENCH_BIND_COUNTER)
#undef LOADBENCH_BIND_COUNTER
    m.attr("COUNTERS") = counter_names();
    m.attr("PHASES") = phase_names();

    py::class_<generator::RunResult>(m, "RunResult", "A finished run (core/generator/base/config.hpp)")
        .def_readonly("totals", &generator::RunResult::totals)
        .def_readonly("interval_s", &generator::RunResult::interval_s)
        .def_readonly("duration_s", &generator::RunResult::duration_s)
        .def_readonly("warmup_s", &generator::RunResult::warmup_s)
        .def_readonly("cpu_s", &generator::RunResult::cpu_s)
        .def_readonly("threads", &generator::RunResult::threads)
        .def_readonly("interrupted", &generator::RunResult::interrupted)
        .def_readonly("open_loop", &generator::RunResult::open_loop)
        .def_readonly("target_rate", &generator::RunResult::target_rate)
        .def_readonly("max_connections", &generator::RunResult::max_connections)
        .def_readonly("pool_size", &generator::RunResult::pool_size)
        .def_readonly("preconnected", &generator::RunResult::preconnected)
        .def_readonly("udp_drops_measured", &generator::RunResult::udp_drops_measured)
        .def_readonly("udp_in_errors", &generator::RunResult::udp_in_errors)
        .def_readonly("udp_rcvbuf_errors", &generator::RunResult::udp_rcvbuf_errors)
        .def_property_readonly("timeline", [](const generator::RunResult& r) { return timeline_columns(r.timeline); });

    py::class_<generator::Progress>(m, "Progress", "A run's live counters")
        .def_readonly("elapsed_s", &generator::Progress::elapsed_s)
        .def_readonly("warming_up", &generator::Progress::warming_up)
        .def_readonly("finished", &generator::Progress::finished)
        .def_readonly("responses", &generator::Progress::responses)
        .def_readonly("errors", &generator::Progress::errors)
        .def_readonly("completed", &generator::Progress::completed);

    py::class_<Engine>(m, "Engine", "The native load engine (use loadbench.run instead)")
        .def(py::init([](EngineConfig config) {
                 return translating([&] { return std::make_unique<Engine>(std::move(config)); });
             }),
             py::arg("config"))
        .def("preconnect", &Engine::preconnect, py::arg("timeout_s"), py::call_guard<py::gil_scoped_release>(),
             "Open every connection (TLS included) before start(), at most timeout_s; how many are open")
        .def("start", &Engine::start, py::call_guard<py::gil_scoped_release>())
        .def("wait", &Engine::wait_for, py::arg("seconds"), py::call_guard<py::gil_scoped_release>(),
             "Wait up to `seconds` with the GIL released; True once the run is over.")
        .def("stop", &Engine::stop, py::call_guard<py::gil_scoped_release>())
        .def("progress", &Engine::progress)
        .def("result", &Engine::result, py::call_guard<py::gil_scoped_release>());
    m.def("http3_available", &generator::http3_available,
          "Whether this build has HTTP/3 (ngtcp2 + GnuTLS + nghttp3 were found when it was built)");
    m.def("tls_libraries", &generator::tls_libraries, "The TLS libraries this build can use, the default first");
}

}  // namespace loadbench::bindings
