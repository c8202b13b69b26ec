#include "bindings/registry.hpp"

namespace loadbench::bindings {

// BOOTSTRAP: filled in by the sampler work (issue), nothing exported yet.
void register_sampler(pybind11::module_&) {}

}  // namespace loadbench::bindings
