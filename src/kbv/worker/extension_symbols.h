// What the candidate's own compiled extensions call and hold, read from the shared objects this
// process mapped from its extension builds folder: the library compute they reach below the
// dispatcher (hacks/library_entry.h), which the profiler cannot see, and the functions they
// define (a CUDA kernel's host stub carries the kernel's name), which tell the candidate's kernels
// from a library's launched inside its code.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace kbv::worker {

struct ExtensionSymbols {
  nlohmann::json library_calls = nlohmann::json::array();  // [{symbol, library, extension}], at most 16
  std::set<std::string> defined;                           // demangled
  // Imported switches of torch's op recording (at::enableRecordFunction, which
  // DisableRecordFunctionGuard calls; removing or disabling callbacks): kbv's record of each
  // call's ops, and torch's profiler, ride on it.
  std::set<std::string> recording_switches;
};

// `extensions_dir`: TORCH_EXTENSIONS_DIR. Objects that cannot be read are left out.
ExtensionSymbols extension_symbols(const std::string& extensions_dir);

}  // namespace kbv::worker
