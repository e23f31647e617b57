#include "kbv/python/interpreter.h"

#include <Python.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "kbv/common/cache_dir.h"

namespace kbv::python {
namespace {

// An environment that writes no bytecode (PYTHONDONTWRITEBYTECODE, as some images set) and names
// no directory for it has every process compile every module it imports from source: on the H200
// image, `import torch` took 3.2 s instead of 1.4-1.6 s, and each candidate's import of
// torch.utils.cpp_extension paid the same way (docs/performance.md, "Bytecode"). There kbv keeps
// the bytecode in its own cache, never beside the sources; a prefix the user set is left alone.
void keep_bytecode_in_cache() {
  PyObject* dont_write = PySys_GetObject("dont_write_bytecode");  // borrowed
  PyObject* prefix = PySys_GetObject("pycache_prefix");
  if (dont_write == nullptr || PyObject_IsTrue(dont_write) != 1 || (prefix != nullptr && prefix != Py_None)) return;
  PyObject* directory = PyUnicode_DecodeFSDefault((cache_dir() + "/pycache").c_str());
  if (directory == nullptr || PySys_SetObject("pycache_prefix", directory) != 0 ||
      PySys_SetObject("dont_write_bytecode", Py_False) != 0)
    PyErr_Clear();  // without it the imports only compile again, as they would have
  Py_XDECREF(directory);
}

}  // namespace

void start_interpreter(const std::string& python_executable) {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  // Leave signals alone: the parent ends workers with SIGKILL and a crash must stay a crash.
  config.install_signal_handlers = 0;
  // What the candidate prints reaches the log pipe as it prints (as python -u): a worker ends with
  // _exit, no interpreter teardown, which would drop what sys.stdout still buffered, and the
  // record keeps that log. Not left to PYTHONUNBUFFERED, which only some environments set.
  config.buffered_stdio = 0;
  PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, python_executable.c_str());
  if (!PyStatus_Exception(status)) {
    status = PyConfig_SetBytesString(&config, &config.executable, python_executable.c_str());
  }
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    throw std::runtime_error(std::string("cannot start Python (") + python_executable +
                             "): " + (status.err_msg ? status.err_msg : "unknown error"));
  }
  keep_bytecode_in_cache();
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) {
    PyErr_Print();
    throw std::runtime_error("cannot import torch in " + python_executable);
  }
  Py_DECREF(torch);
}

std::vector<std::string> search_paths() {
  std::vector<std::string> paths;
  const auto add = [&](PyObject* value) {  // borrowed
    const char* text = value != nullptr && PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : nullptr;
    if (text == nullptr)
      PyErr_Clear();
    else if (text[0] == '/')
      paths.emplace_back(text);
  };
  for (const char* name : {"prefix", "base_prefix", "exec_prefix", "base_exec_prefix"}) add(PySys_GetObject(name));
  if (PyObject* path = PySys_GetObject("path"); path != nullptr && PyList_Check(path)) {
    for (Py_ssize_t i = 0; i < PyList_Size(path); ++i) add(PyList_GetItem(path, i));
  }
  return paths;
}

namespace {

// A name without a slash (KBV_PYTHON=python3) as the shell finds it on PATH: configured by a bare
// name, CPython finds no prefix and so no torch. The path is kept as found, not resolved: a virtual
// environment's python is a link to its base interpreter.
std::string on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "";
  while (!rest.empty()) {
    const size_t end = std::min(rest.find(':'), rest.size());
    const std::string candidate = std::string(end == 0 ? "." : rest.substr(0, end)) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  return name;
}

}  // namespace

std::string default_python_executable() {
  if (const char* env = std::getenv("KBV_PYTHON"); env != nullptr && *env != '\0') return on_path(env);
  return KBV_PYTHON_EXECUTABLE;
}

}  // namespace kbv::python
