// Thin binding of the connection holder (C10k memory per connection): its config in, its
// result structs out as they are, the GIL released around every call.
#include <pybind11/stl.h>

#include "bindings/registry.hpp"
#include "core/generator/loop/connection_holder.hpp"

namespace py = pybind11;

namespace loadbench::bindings {

void register_connections(py::module_& m) {
    using generator::ConnectionHolder;
    using generator::HoldConfig;
    // The results are bound as they are (read-only fields), not copied into dicts.
    py::class_<generator::OpenResult>(m, "OpenResult")
        .def_readonly("connected", &generator::OpenResult::connected)
        .def_readonly("failed", &generator::OpenResult::failed)
        .def_readonly("timed_out", &generator::OpenResult::timed_out)
        .def_readonly("first_error", &generator::OpenResult::first_error);
    py::class_<generator::RequestResult>(m, "RequestResult")
        .def_readonly("ok", &generator::RequestResult::ok)
        .def_readonly("non_2xx", &generator::RequestResult::non_2xx)
        .def_readonly("failed", &generator::RequestResult::failed)
        .def_readonly("first_error", &generator::RequestResult::first_error);
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
        .def("open", &ConnectionHolder::open, py::arg("timeout_s"), py::call_guard<py::gil_scoped_release>())
        .def("held", &ConnectionHolder::held, py::call_guard<py::gil_scoped_release>())
        .def("request_all", &ConnectionHolder::request_all, py::arg("timeout_s"),
             py::call_guard<py::gil_scoped_release>())
        .def("close", &ConnectionHolder::close_all, py::call_guard<py::gil_scoped_release>())
        .def_property_readonly_static("bytes_per_slot", [](py::object) { return ConnectionHolder::bytes_per_slot(); });
}

}  // namespace loadbench::bindings
