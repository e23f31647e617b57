#include "kbv/python/harness.h"

#include <optional>

#include <pybind11/eval.h>

#include "kbv/python/harness_source.h"  // generated from harness.py by CMake

namespace kbv::python {

pybind11::module_& harness() {
  static std::optional<pybind11::module_> module;
  if (!module) {
    namespace py = pybind11;
    py::object created = py::module_::import("types").attr("ModuleType")("kbv_harness");
    py::exec(kHarnessSource, created.attr("__dict__"));
    py::module_::import("sys").attr("modules")["kbv_harness"] = created;
    module = py::reinterpret_borrow<py::module_>(created);
  }
  return *module;
}

}  // namespace kbv::python
