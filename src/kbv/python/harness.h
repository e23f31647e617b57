// The worker's embedded Python modules (harness.py, screen.py, monitor.py, compiled into the binary).
#pragma once

#include <pybind11/pybind11.h>

namespace kbv::python {

// Each imports its module on first use (the interpreter must be running) and keeps it.
pybind11::module_& harness();  // kbv_harness: import files, build modules, call forward
pybind11::module_& screen();   // kbv_screen: the static screen of a candidate's source
pybind11::module_& monitor();  // kbv_monitor: the runtime watch of a candidate

}  // namespace kbv::python
