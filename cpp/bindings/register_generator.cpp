#include "bindings/registry.hpp"

namespace loadbench::bindings {

// BOOTSTRAP: filled in by the generator work (issue), nothing exported yet.
void register_generator(pybind11::module_&) {}

}  // namespace loadbench::bindings
