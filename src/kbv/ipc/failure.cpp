#include "kbv/ipc/failure.h"

#include <array>
#include <utility>

namespace kbv::ipc {
namespace {

constexpr std::array<std::pair<FailureKind, std::string_view>, 8> kNames = {{
    {FailureKind::compile_error, "compile_error"},
    {FailureKind::runtime_error, "runtime_error"},
    {FailureKind::crash, "crash"},
    {FailureKind::incorrect, "incorrect"},
    {FailureKind::problem_error, "problem_error"},
    {FailureKind::reference_error, "reference_error"},
    {FailureKind::no_device, "no_device"},
    {FailureKind::internal, "internal"},
}};

}  // namespace

std::string_view name(FailureKind kind) {
  for (const auto& [known, text] : kNames) {
    if (known == kind) return text;
  }
  return "internal";  // unreachable: every kind has its name above
}

FailureKind failure_kind(std::string_view text) {
  for (const auto& [kind, known] : kNames) {
    if (known == text) return kind;
  }
  throw std::invalid_argument("no worker failure is named '" + std::string(text) + "'");
}

}  // namespace kbv::ipc
