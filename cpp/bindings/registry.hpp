#pragma once
// One register_<part>() per part of the core; module.cpp ties them together.
// The bindings are thin: convert arguments, release the GIL, call the core.
#include <pybind11/pybind11.h>

namespace loadbench::bindings {

void register_server(pybind11::module_& m);
void register_generator(pybind11::module_& m);
void register_sampler(pybind11::module_& m);
void register_connections(pybind11::module_& m);

}  // namespace loadbench::bindings
