#include "kbv/python/interpreter.h"

#include <Python.h>

#include <cstdlib>
#include <stdexcept>

namespace kbv::python {

void start_interpreter(const std::string& python_executable) {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  // Leave signals alone: the parent ends workers with SIGKILL and a crash must stay a crash.
  config.install_signal_handlers = 0;
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
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) {
    PyErr_Print();
    throw std::runtime_error("cannot import torch in " + python_executable);
  }
  Py_DECREF(torch);
}

std::string default_python_executable() {
  if (const char* env = std::getenv("KBV_PYTHON"); env != nullptr && *env != '\0') return env;
  return KBV_PYTHON_EXECUTABLE;
}

}  // namespace kbv::python
