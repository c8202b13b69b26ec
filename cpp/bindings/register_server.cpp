// loadbench._core.Server: the Beast reference server inside the Python process (tests,
// notebooks, quick demos). For measurement use the native binary (ServerProcess) instead.
#include "bindings/registry.hpp"
#include "core/server/server.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace loadbench::bindings {

namespace py = pybind11;
using loadbench::server::AcceptStrategy;
using loadbench::server::CountersSnapshot;
using loadbench::server::RequestKind;
using loadbench::server::Server;
using loadbench::server::ServerConfig;

namespace {

py::dict counters_dict(const CountersSnapshot& c) {
    py::dict requests;
    for (std::size_t i = 0; i < loadbench::server::request_kind_count; ++i) {
        requests[py::str(std::string(to_string(static_cast<RequestKind>(i))))] = c.requests[i];
    }
    py::dict d;
    d["connections_accepted"] = c.connections_accepted;
    d["connections_open"] = c.connections_open;
    d["requests"] = requests;
    d["requests_total"] = c.requests_total();
    py::dict h1;
    h1["connections"] = c.h1_connections();
    h1["requests"] = c.h1_requests();
    d["h1"] = h1;
    const auto block = [](const auto& counts) {
        py::dict out;
        each_counter(counts, [&out](const char* name, std::uint64_t value) { out[name] = value; });
        return out;
    };
    d["h2"] = block(c.h2);
    d["h3"] = block(c.h3);
    return d;
}

AcceptStrategy parse_accept(const std::string& accept) {
    if (accept == "reuseport") return AcceptStrategy::reuseport;
    if (accept == "shared") return AcceptStrategy::shared;
    throw loadbench::server::ConfigError("accept must be 'reuseport' or 'shared', got '" + accept + "'");
}

}  // namespace

void register_server(py::module_& m) {
    // Bad configuration -> ValueError; start failures (port in use, bad cert) -> OSError.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const loadbench::server::StartError& e) {
            PyErr_SetString(PyExc_OSError, e.what());
        }
    });

    py::class_<Server>(
        m, "Server",
        "Boost.Beast HTTP/1.1 + nghttp2 HTTP/2 reference server running in this process on its own threads.")
        .def(py::init([](const std::string& host, int port, bool http, bool tls, int tls_port,
                         std::optional<std::string> cert, std::optional<std::string> key, unsigned workers,
                         std::size_t max_body, unsigned header_timeout_ms, unsigned idle_timeout_ms,
                         const std::string& accept, bool h2, std::uint32_t h2_max_streams,
                         std::uint64_t h2_max_requests, const std::string& unix_path, bool h3, bool h3_early_data) {
                 if (port < 0 || port > 65535 || tls_port < 0 || tls_port > 65535) {
                     throw loadbench::server::ConfigError("ports must be in 0..65535");
                 }
                 ServerConfig c;
                 c.host = host;
                 c.serve_http = http;
                 c.http_port = static_cast<std::uint16_t>(port);
                 c.serve_https = tls;
                 c.https_port = static_cast<std::uint16_t>(tls_port);
                 c.cert_file = cert.value_or("");
                 c.key_file = key.value_or("");
                 c.workers = workers;
                 c.max_body_bytes = max_body;
                 c.header_timeout_ms = header_timeout_ms;
                 c.idle_timeout_ms = idle_timeout_ms;
                 c.accept = parse_accept(accept);
                 c.h2 = h2;
                 if (h2_max_streams == 0) throw loadbench::server::ConfigError("h2_max_streams must be at least 1");
                 c.h2_max_streams = h2_max_streams;
                 c.h2_max_requests = h2_max_requests;
                 c.unix_path = unix_path;
                 c.h3 = h3;
                 c.h3_early_data = h3_early_data;
                 return std::make_unique<Server>(c);
             }),
             py::kw_only(), py::arg("host") = "127.0.0.1", py::arg("port") = 0, py::arg("http") = true,
             py::arg("tls") = false, py::arg("tls_port") = 0, py::arg("cert") = py::none(), py::arg("key") = py::none(),
             py::arg("workers") = 1, py::arg("max_body") = 1024 * 1024, py::arg("header_timeout_ms") = 10'000,
             py::arg("idle_timeout_ms") = 60'000, py::arg("accept") = "reuseport", py::arg("h2") = true,
             py::arg("h2_max_streams") = 100, py::arg("h2_max_requests") = 0, py::arg("unix") = "",
             py::arg("h3") = false, py::arg("h3_early_data") = false)
        .def("start", &Server::start, py::call_guard<py::gil_scoped_release>(),
             "Bind the listeners and start the worker threads; raises OSError (port in use, bad certificate).")
        .def(
            "stop",
            [](Server& s, double timeout) {
                py::gil_scoped_release release;
                s.request_stop();
                return s.wait_for(std::chrono::milliseconds(static_cast<long long>(timeout * 1000)));
            },
            py::arg("timeout") = 10.0,
            "Graceful stop: no new connections, in-flight responses finish. False if `timeout` s passed first.")
        .def_property_readonly("running", &Server::running)
        .def_property_readonly("http_port", &Server::http_port)
        .def_property_readonly("https_port", &Server::https_port)
        .def_property_readonly("workers", [](const Server& s) { return s.config().workers; })
        .def(
            "counters", [](const Server& s) { return counters_dict(s.counters()); },
            "Connections accepted/open, requests per route, and per protocol (h1, h2, h3), summed over the workers.")
        .def(
            "__enter__",
            [](Server& s) -> Server& {
                {
                    py::gil_scoped_release release;
                    s.start();
                }
                return s;
            },
            py::return_value_policy::reference)
        .def("__exit__", [](Server& s, py::args) {
            py::gil_scoped_release release;
            s.stop();
        });
}

}  // namespace loadbench::bindings
