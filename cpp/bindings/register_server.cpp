// loadbench._core.Server: the Beast reference server inside the Python process (tests,
// notebooks, quick demos). For measurement use the native binary (ServerProcess) instead.
#include "bindings/registry.hpp"
#include "core/server/base/options.hpp"
#include "core/server/server.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace loadbench::bindings {

namespace py = pybind11;
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

    m.def(
        "server_options",
        [] {
            const ServerConfig defaults;
            py::list out;
            for (const auto& o : loadbench::server::server_options()) {
                py::dict d;
                d["flag"] = std::string(o.flag);
                d["keyword"] = std::string(o.keyword);
                d["kind"] = std::string(to_string(o.kind));
                d["min"] = o.min;
                d["max"] = o.max;
                d["metavar"] = std::string(o.metavar);
                d["help"] = std::string(o.help);
                d["default"] = o.get(defaults);
                out.append(d);
            }
            return out;
        },
        "loadbench-server's options as declared once in C++ (core/server/base/options.hpp): flag, keyword, kind "
        "(text, path, integer, accept, on, off), min and max (integers), metavar, help, and the default as "
        "its flag would give it.");

    py::class_<Server>(
        m, "Server",
        "Boost.Beast HTTP/1.1 + nghttp2 HTTP/2 reference server running in this process on its own threads.")
        .def(py::init([](const py::kwargs& kwargs) {
                 // every keyword is an option of options.hpp, read as its flag would be: one
                 // parser, one range and one message per option, whoever sets it
                 ServerConfig c;
                 for (const auto& [key, value] : kwargs) {
                     const std::string name = py::str(key);
                     const auto* option = loadbench::server::find_option(name);
                     if (option == nullptr || option->keyword != name) {  // a keyword, not a flag
                         throw py::type_error("Server() got an unexpected keyword argument '" + name + "'");
                     }
                     if (value.is_none()) continue;  // the default
                     if (option->is_switch()) {
                         // the keyword has the field's sense (http=False is --no-http); the other
                         // sense is the default, which a switch exists to change
                         if (value.cast<bool>() == (option->kind == loadbench::server::OptionKind::on))
                             option->set(c, "");
                     } else if (py::isinstance<py::bool_>(value)) {
                         throw loadbench::server::ConfigError(std::string(option->flag) + " takes a value, not a bool");
                     } else {
                         try {
                             option->set(c, std::string(py::str(value)));
                         } catch (const loadbench::server::ConfigError& e) {
                             // named as the caller wrote it, and as the flag it is
                             throw loadbench::server::ConfigError(name + ": " + e.what());
                         }
                     }
                 }
                 return std::make_unique<Server>(c);
             }),
             "Keywords: each option's keyword in server_options(), checked as its flag is.")
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
