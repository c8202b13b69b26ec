#include "bindings/registry.hpp"

namespace loadbench::bindings {

// BOOTSTRAP: filled in by the server work (issue), nothing exported yet.
void register_server(pybind11::module_&) {}

}  // namespace loadbench::bindings
