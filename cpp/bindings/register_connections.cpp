// Thin binding of the connection holder (C10k memory per connection): convert, release the
// GIL, call.
#include <pybind11/stl.h>

#include "bindings/registry.hpp"
#include "core/generator/connection_holder.hpp"

namespace py = pybind11;

namespace loadbench::bindings {

void register_connections(py::module_& m) {
    using generator::ConnectionHolder;
    using generator::HoldConfig;
    py::class_<ConnectionHolder>(m, "ConnectionHolder", "Many idle keep-alive connections at minimal cost each")
        .def(py::init([](const std::string& address, int port, int connections, const std::string& request,
                         bool head_request, int connects_in_flight) {
                 HoldConfig config;
                 config.address = address;
                 config.port = static_cast<std::uint16_t>(port);
                 config.connections = connections;
                 config.request = request;
                 config.head_request = head_request;
                 config.connects_in_flight = connects_in_flight;
                 return std::make_unique<ConnectionHolder>(std::move(config));
             }),
             py::arg("address"), py::arg("port"), py::arg("connections"), py::arg("request"),
             py::arg("head_request") = false, py::arg("connects_in_flight") = 256)
        .def(
            "open",
            [](ConnectionHolder& self, double timeout_s) {
                generator::OpenResult r;
                {
                    py::gil_scoped_release release;
                    r = self.open(timeout_s);
                }
                py::dict d;
                d["connected"] = r.connected;
                d["failed"] = r.failed;
                d["timed_out"] = r.timed_out;
                d["first_error"] = r.first_error;
                return d;
            },
            py::arg("timeout_s"))
        .def("held", &ConnectionHolder::held, py::call_guard<py::gil_scoped_release>())
        .def(
            "request_all",
            [](ConnectionHolder& self, double timeout_s) {
                generator::RequestResult r;
                {
                    py::gil_scoped_release release;
                    r = self.request_all(timeout_s);
                }
                py::dict d;
                d["ok"] = r.ok;
                d["non_2xx"] = r.non_2xx;
                d["failed"] = r.failed;
                d["first_error"] = r.first_error;
                return d;
            },
            py::arg("timeout_s"))
        .def("close", &ConnectionHolder::close_all, py::call_guard<py::gil_scoped_release>())
        .def_property_readonly_static("bytes_per_slot", [](py::object) { return ConnectionHolder::bytes_per_slot(); });
}

}  // namespace loadbench::bindings
