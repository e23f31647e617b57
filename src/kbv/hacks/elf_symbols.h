// The functions an ELF shared object imports and defines, read from its symbol tables: what a
// candidate's compiled extension calls into, whatever the source said, and what it holds itself.
#pragma once

#include <set>
#include <string>

namespace kbv::hacks {

struct ElfFunctions {
  std::set<std::string> imported;  // undefined dynamic symbols (resolved in other objects), demangled
  std::set<std::string> defined;   // functions defined in it (both symbol tables), demangled
};

// Throws std::runtime_error when `path` cannot be read or is not a 64-bit little-endian ELF file.
ElfFunctions read_elf_functions(const std::string& path);

}  // namespace kbv::hacks
