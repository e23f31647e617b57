// The embedded harness module (harness.py, compiled into the binary).
#pragma once

#include <pybind11/pybind11.h>

namespace kbv::python {

// Imports harness.py as the module `kbv_harness` on first use; the interpreter must be running.
pybind11::module_& harness();

}  // namespace kbv::python
