#include "kbv/python/harness.h"

#include <optional>

#include <pybind11/eval.h>

#include "kbv/python/embedded_sources.h"  // generated from the .py files by CMake

namespace kbv::python {
namespace {

namespace py = pybind11;

// Executes `source` as a fresh module registered in sys.modules under `name`.
py::module_ embedded_module(const char* name, const char* source) {
  py::object created = py::module_::import("types").attr("ModuleType")(name);
  py::exec(source, created.attr("__dict__"));
  py::module_::import("sys").attr("modules")[name] = created;
  return py::reinterpret_borrow<py::module_>(created);
}

// torch.cuda.is_available() asks NVML instead of initializing CUDA (torch's own switch against
// poisoning a later fork).
constexpr const char* kNvmlCheck = "PYTORCH_NVML_BASED_CUDA_CHECK";

}  // namespace

py::module_& harness() {
  static std::optional<py::module_> module;
  if (!module) module = embedded_module("kbv_harness", kHarnessSource);
  return *module;
}

py::module_& draws() {
  static std::optional<py::module_> module;
  if (!module) module = embedded_module("kbv_draws", kDrawsSource);
  return *module;
}

py::module_& screen() {
  static std::optional<py::module_> module;
  if (!module) module = embedded_module("kbv_screen", kScreenSource);
  return *module;
}

py::module_& monitor() {
  static std::optional<py::module_> module;
  if (!module) module = embedded_module("kbv_monitor", kMonitorSource);
  return *module;
}

void preload_for_workers() {
  harness();
  draws();
  screen();
  monitor();
  py::object environ = py::module_::import("os").attr("environ");
  const py::object previous = environ.attr("pop")(kNvmlCheck, py::none());
  environ[kNvmlCheck] = "1";
  try {
    py::module_::import("torch.utils.cpp_extension");
  } catch (const py::error_already_set&) {
    // Without it no load_inline works: each candidate's own import reports that, where it belongs.
  }
  environ.attr("pop")(kNvmlCheck, py::none());
  if (!previous.is_none()) environ[kNvmlCheck] = previous;
}

}  // namespace kbv::python
