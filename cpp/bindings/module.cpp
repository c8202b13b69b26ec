#include <pybind11/stl.h>

#include "bindings/registry.hpp"
#include "core/build_info.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
    m.doc() = "loadbench native core: Beast servers, load generator, /proc sampler";
    m.def("build_info", [] {
        const auto info = loadbench::build_info();
        py::dict d;
        d["version"] = info.version;
        d["compiler"] = info.compiler;
        d["boost"] = info.boost;
        d["openssl"] = info.openssl;
        d["build_type"] = info.build_type;
        return d;
    });
    loadbench::bindings::register_server(m);
    loadbench::bindings::register_generator(m);
    loadbench::bindings::register_sampler(m);
    loadbench::bindings::register_connections(m);
}
