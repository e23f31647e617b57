// The embedded CPython interpreter of a worker process.
#pragma once

#include <string>
#include <vector>

namespace kbv::python {

// Starts CPython configured as `python_executable` (a virtual environment's python: sys.prefix
// and site-packages follow it; pybind11's default start would ignore the venv), then imports
// torch, which must precede wrapping any tensor for Python. One per process; the calling thread
// keeps the GIL. Never finalized: workers end with _exit, since torch's teardown is not safe.
void start_interpreter(const std::string& python_executable);

// Where the running interpreter finds its standard library and packages: its four prefixes and
// sys.path, the absolute ones (a sandboxed worker must be able to read them).
std::vector<std::string> search_paths();

// KBV_PYTHON from the environment, else the interpreter kbv was built against.
std::string default_python_executable();

}  // namespace kbv::python
