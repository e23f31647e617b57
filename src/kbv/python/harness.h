// The worker's embedded Python modules (harness.py, draws.py, screen.py, monitor.py, compiled into the binary).
#pragma once

#include <pybind11/pybind11.h>

namespace kbv::python {

// Each imports its module on first use (the interpreter must be running) and keeps it.
pybind11::module_& harness();  // kbv_harness: import files, build modules, call forward
pybind11::module_& draws();    // kbv_draws: the problem's inputs, from generators no other thread reads
pybind11::module_& screen();   // kbv_screen: the static screen of a candidate's source
pybind11::module_& monitor();  // kbv_monitor: the runtime watch of a candidate

// In the zygote, before any fork: what every worker would otherwise import for itself. The four
// modules above, and torch.utils.cpp_extension, which every candidate's load_inline imports
// (0.3-0.5 s afresh, setuptools most of it). Its import asks torch.cuda.is_available(), which
// would initialize CUDA, and a forked child cannot use a CUDA initialized before the fork: the
// question goes to NVML instead for that import (PYTORCH_NVML_BASED_CUDA_CHECK=1, restored after).
void preload_for_workers();

}  // namespace kbv::python
