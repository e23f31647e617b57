#include "kbv/hacks/elf_symbols.h"

#include <cxxabi.h>
#include <elf.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace kbv::hacks {
namespace {

std::string demangled(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) return name;
  std::string out(text);
  std::free(text);
  return out;
}

// A T at `offset` of `bytes`, or nullptr when it would not lie inside.
template <typename T>
const T* at(const std::vector<char>& bytes, std::uint64_t offset, std::uint64_t count = 1) {
  if (offset > bytes.size() || count > (bytes.size() - offset) / sizeof(T)) return nullptr;
  return reinterpret_cast<const T*>(bytes.data() + offset);
}

}  // namespace

ElfFunctions read_elf_functions(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) throw std::runtime_error("cannot read " + path);
  std::vector<char> bytes(static_cast<std::size_t>(file.tellg()));
  if (!file.seekg(0).read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    throw std::runtime_error("cannot read " + path);
  const auto* header = at<Elf64_Ehdr>(bytes, 0);
  if (header == nullptr || std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 ||
      header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_ident[EI_DATA] != ELFDATA2LSB ||
      header->e_shentsize != sizeof(Elf64_Shdr)) {
    throw std::runtime_error(path + " is not a 64-bit little-endian ELF file");
  }
  const auto* sections = at<Elf64_Shdr>(bytes, header->e_shoff, header->e_shnum);
  if (sections == nullptr) throw std::runtime_error(path + ": section headers out of bounds");
  ElfFunctions out;
  for (std::uint16_t s = 0; s < header->e_shnum; ++s) {
    const Elf64_Shdr& table = sections[s];
    if ((table.sh_type != SHT_DYNSYM && table.sh_type != SHT_SYMTAB) || table.sh_link >= header->e_shnum) continue;
    const Elf64_Shdr& names = sections[table.sh_link];
    const auto* symbols = at<Elf64_Sym>(bytes, table.sh_offset, table.sh_size / sizeof(Elf64_Sym));
    const char* strings = at<char>(bytes, names.sh_offset, names.sh_size);
    if (symbols == nullptr || strings == nullptr || names.sh_size == 0) continue;
    for (std::uint64_t i = 0; i < table.sh_size / sizeof(Elf64_Sym); ++i) {
      const Elf64_Sym& symbol = symbols[i];
      if (symbol.st_name == 0 || symbol.st_name >= names.sh_size) continue;
      const char* name = strings + symbol.st_name;
      if (std::memchr(name, '\0', names.sh_size - symbol.st_name) == nullptr) continue;
      if (symbol.st_shndx == SHN_UNDEF) {
        if (table.sh_type == SHT_DYNSYM) out.imported.insert(demangled(name));
      } else if (ELF64_ST_TYPE(symbol.st_info) == STT_FUNC) {
        out.defined.insert(demangled(name));
      }
    }
  }
  return out;
}

}  // namespace kbv::hacks
