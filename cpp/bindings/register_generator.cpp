// Thin binding of the load engine: convert arguments, release the GIL, call the core.
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

py::dict histogram_to_dict(const stats::HdrHistogram& h) {
    py::dict hist;
    hist["lowest"] = h.lowest_discernible();
    hist["highest"] = h.highest_trackable();
    hist["significant_figures"] = h.significant_figures();
    hist["counts"] = py::array_t<int64_t>(static_cast<py::ssize_t>(h.counts().size()), h.counts().data());
    hist["min"] = h.min();
    hist["max"] = h.max();
    return hist;
}

py::dict result_to_dict(const generator::RunResult& r) {
    const auto& t = r.totals;
    py::dict d;
    d["duration_s"] = r.duration_s;
    d["warmup_s"] = r.warmup_s;
    d["interval_s"] = r.interval_s;
    d["threads"] = r.threads;
    d["interrupted"] = r.interrupted;
    d["cpu_s"] = r.cpu_s;
    d["responses"] = t.responses;
    d["unfinished"] = t.unfinished;
    py::dict codes;
    for (size_t code = 0; code < t.status_codes.size(); ++code)
        if (t.status_codes[code]) codes[py::int_(code)] = t.status_codes[code];
    d["status_codes"] = codes;
    py::dict errors;
    for (int k = 0; k < generator::kErrorKinds; ++k) errors[generator::kErrorKindNames[static_cast<size_t>(k)]] = t.errors[static_cast<size_t>(k)];
    d["errors"] = errors;
    d["first_error"] = t.first_error;
    d["bytes_read"] = t.bytes_read;
    d["bytes_written"] = t.bytes_written;
    d["connections_opened"] = t.connections_opened;
    d["tls_handshakes"] = t.tls_handshakes;
    d["tls_resumed"] = t.tls_resumed;
    d["reconnects"] = t.reconnects;
    d["goaways"] = t.goaways;
    d["retried"] = t.retried;
    py::dict resets;
    for (size_t code = 0; code < t.streams_reset.size(); ++code) {
        if (!t.streams_reset[code]) continue;
        const char* name = code + 1 < t.streams_reset.size() ? nghttp2_http2_strerror(static_cast<uint32_t>(code)) : "unknown";
        resets[name] = t.streams_reset[code];
    }
    d["streams_reset"] = resets;
    d["histogram"] = histogram_to_dict(t.latency_us);
    d["open_loop"] = r.open_loop;
    if (r.open_loop) {
        d["target_rate"] = r.target_rate;
        d["max_connections"] = r.max_connections;
        d["due"] = t.due;
        d["sends"] = t.sends;
        d["late_sends"] = t.late_sends;
        d["histogram_uncorrected"] = histogram_to_dict(t.latency_uncorrected_us);
        d["lateness"] = histogram_to_dict(t.lateness_us);
    }
    const size_t n = r.timeline.size();
    py::array_t<int64_t> responses(static_cast<py::ssize_t>(n)), errs(static_cast<py::ssize_t>(n)),
        p50(static_cast<py::ssize_t>(n)), p99(static_cast<py::ssize_t>(n));
    for (size_t i = 0; i < n; ++i) {
        responses.mutable_at(i) = static_cast<int64_t>(r.timeline[i].responses);
        errs.mutable_at(i) = static_cast<int64_t>(r.timeline[i].errors);
        p50.mutable_at(i) = r.timeline[i].p50_us;
        p99.mutable_at(i) = r.timeline[i].p99_us;
    }
    // Each interval's histogram, sparse: bucket indexes and counts, concatenated, with offsets.
    size_t nonzero = 0;
    for (const auto& row : r.timeline) nonzero += row.latency.size();
    py::array_t<int32_t> bucket_index(static_cast<py::ssize_t>(nonzero));
    py::array_t<int64_t> bucket_count(static_cast<py::ssize_t>(nonzero));
    py::array_t<int64_t> offsets(static_cast<py::ssize_t>(n + 1));
    size_t at = 0;
    for (size_t i = 0; i < n; ++i) {
        offsets.mutable_at(i) = static_cast<int64_t>(at);
        for (const auto& [index, count] : r.timeline[i].latency) {
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
    d["timeline"] = timeline;
    return d;
}

}  // namespace

void register_generator(py::module_& m) {
    py::class_<Engine>(m, "Engine", "The native load engine (use loadbench.run instead)")
        .def(py::init([](const std::string& url, const std::vector<py::tuple>& requests, int connections, int threads,
                         double duration_s, int64_t total_requests, double warmup_s, double timeout_s, bool keepalive,
                         bool tls_verify, const std::string& tls_cacert, bool tls_session_resumption,
                         const std::vector<int>& cpus, double interval_s, double rate, bool poisson, uint64_t seed,
                         int max_connections, const std::string& protocol, int streams,
                         const std::string& tls_library, bool ack_with_request, bool rst_close) {
                 EngineConfig c;
                 c.url = url;
                 for (const auto& item : requests) {
                     http::RequestTemplate r;
                     r.method = item[0].cast<std::string>();
                     r.target = item[1].cast<std::string>();
                     r.headers = item[2].cast<std::vector<std::pair<std::string, std::string>>>();
                     r.body = item[3].cast<std::string>();  // bytes
                     c.requests.push_back(std::move(r));
                 }
                 c.connections = connections;
                 c.threads = threads;
                 c.duration_s = duration_s;
                 c.total_requests = total_requests;
                 c.warmup_s = warmup_s;
                 c.timeout_s = timeout_s;
                 c.keepalive = keepalive;
                 c.tls_verify = tls_verify;
                 c.tls_cacert = tls_cacert;
                 c.tls_session_resumption = tls_session_resumption;
                 c.tls_library = tls_library;
                 c.ack_with_request = ack_with_request;
                 c.rst_close = rst_close;
                 c.cpus = cpus;
                 c.interval_s = interval_s;
                 c.rate = rate;
                 c.poisson = poisson;
                 c.seed = seed;
                 c.max_connections = max_connections;
                 if (protocol != "http/1.1" && protocol != "h2")
                     throw py::value_error("config: protocol must be 'http/1.1' or 'h2' (got '" + protocol + "')");
                 c.h2 = protocol == "h2";
                 c.streams = streams;
                 return translating([&] { return std::make_unique<Engine>(std::move(c)); });
             }),
             py::arg("url"), py::arg("requests"), py::arg("connections"), py::arg("threads"), py::arg("duration_s"),
             py::arg("total_requests"), py::arg("warmup_s"), py::arg("timeout_s"), py::arg("keepalive"),
             py::arg("tls_verify"), py::arg("tls_cacert"), py::arg("tls_session_resumption"), py::arg("cpus"),
             py::arg("interval_s"), py::arg("rate") = 0.0, py::arg("poisson") = false, py::arg("seed") = 1,
             py::arg("max_connections") = 0, py::arg("protocol") = "http/1.1", py::arg("streams") = 1,
             py::arg("tls_library") = "openssl", py::arg("ack_with_request") = false, py::arg("rst_close") = false)
        .def("start", &Engine::start, py::call_guard<py::gil_scoped_release>())
        .def("wait", &Engine::wait_for, py::arg("seconds"), py::call_guard<py::gil_scoped_release>(),
             "Wait up to `seconds` with the GIL released; True once the run is over.")
        .def("stop", &Engine::stop, py::call_guard<py::gil_scoped_release>())
        .def("progress", [](const Engine& e) {
            const auto p = e.progress();
            py::dict d;
            d["elapsed_s"] = p.elapsed_s;
            d["warming_up"] = p.warming_up;
            d["finished"] = p.finished;
            d["responses"] = p.responses;
            d["errors"] = p.errors;
            return d;
        })
        .def("result", [](Engine& e) {
            generator::RunResult r;
            {
                py::gil_scoped_release release;
                r = e.result();
            }
            return result_to_dict(r);
        });
    m.def("tls_libraries", &generator::tls_libraries, "The TLS libraries this build can use, the default first");
}

}  // namespace loadbench::bindings
