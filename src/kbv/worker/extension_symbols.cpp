#include "kbv/worker/extension_symbols.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <ATen/core/dispatch/Dispatcher.h>

#include "kbv/hacks/elf_symbols.h"
#include "kbv/hacks/library_entry.h"

namespace kbv::worker {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kCallsKept = 16;

// The shared objects mapped into this process from under `folder`.
std::set<std::string> mapped_under(const fs::path& folder) {
  std::set<std::string> found;
  std::ifstream maps("/proc/self/maps");
  const std::string prefix = folder.string() + "/";
  for (std::string line; std::getline(maps, line);) {
    const std::size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.starts_with(prefix) && path.ends_with(".so")) found.insert(path);
  }
  return found;
}

bool is_aten_op(std::string_view name) {
  static const std::set<std::string> ops = [] {
    std::set<std::string> names;
    for (const c10::OperatorName& op : c10::Dispatcher::singleton().getAllOpNames()) {
      if (op.name.starts_with("aten::")) names.insert(op.name.substr(6));
    }
    return names;
  }();
  return ops.count(std::string(name)) > 0;
}

bool switches_recording(const std::string& symbol) {
  for (const char* name : {"at::enableRecordFunction(", "at::clearCallbacks(", "at::clearGlobalCallbacks(",
                           "at::clearThreadLocalCallbacks(", "at::removeCallback(", "at::disableCallback("}) {
    if (symbol.starts_with(name)) return true;
  }
  return false;
}

}  // namespace

ExtensionSymbols extension_symbols(const std::string& extensions_dir) {
  ExtensionSymbols out;
  std::error_code error;
  const fs::path folder = fs::canonical(extensions_dir, error);
  if (error) return out;
  for (const std::string& object : mapped_under(folder)) {
    hacks::ElfFunctions functions;
    try {
      functions = hacks::read_elf_functions(object);
    } catch (const std::runtime_error&) {
      continue;
    }
    for (const std::string& symbol : functions.imported) {
      if (switches_recording(symbol)) out.recording_switches.insert(symbol.substr(0, 160));
      const std::optional<std::string> library = hacks::library_entry(symbol, is_aten_op);
      if (library && out.library_calls.size() < kCallsKept) {
        out.library_calls.push_back({{"symbol", symbol.substr(0, 160)},
                                     {"library", *library},
                                     {"extension", fs::path(object).parent_path().filename()}});
      }
    }
    out.defined.merge(functions.defined);
  }
  return out;
}

}  // namespace kbv::worker
