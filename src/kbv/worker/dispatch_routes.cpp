#include "kbv/worker/dispatch_routes.h"

#include <sstream>

#include <ATen/PythonTorchFunctionTLS.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>

namespace kbv::worker {
namespace {

std::string words(c10::DispatchKeySet keys) {
  std::ostringstream out;
  out << keys;
  return out.str();
}

nlohmann::json key_change(const char* name, c10::DispatchKeySet before, c10::DispatchKeySet now) {
  return {{"what", "dispatcher"}, {"name", name}, {"before", words(before)}, {"after", words(now)}};
}

nlohmann::json count_change(const char* name, long before, long now) {
  return {{"what", "dispatcher"}, {"name", name}, {"before", before}, {"after", now}};
}

// torch's own modes (fake, proxy, functional), each in a slot of its own beside the stack.
long infra_modes() {
  long set = 0;
  for (int key = 0; key < static_cast<int>(c10::impl::TorchDispatchModeKey::NUM_MODE_KEYS); ++key) {
    set += c10::impl::TorchDispatchModeTLS::get_mode(static_cast<c10::impl::TorchDispatchModeKey>(key)).has_value();
  }
  return set;
}

}  // namespace

DispatchRoutes::DispatchRoutes()
    : keys_(c10::impl::tls_local_dispatch_key_set()),
      function_modes_(at::impl::PythonTorchFunctionTLS::stack_len()),
      dispatch_modes_(c10::impl::TorchDispatchModeTLS::stack_len()),
      infra_modes_(infra_modes()) {}

nlohmann::json DispatchRoutes::restore() const {
  nlohmann::json changes = nlohmann::json::array();
  const c10::impl::LocalDispatchKeySet now = c10::impl::tls_local_dispatch_key_set();
  if (now.included_ != keys_.included_)
    changes.push_back(key_change("thread's included keys", keys_.included_, now.included_));
  if (now.excluded_ != keys_.excluded_)
    changes.push_back(key_change("thread's excluded keys", keys_.excluded_, now.excluded_));
  if (!changes.empty()) c10::impl::_force_tls_local_dispatch_key_set(keys_);
  if (const long n = at::impl::PythonTorchFunctionTLS::stack_len(); n != function_modes_) {
    changes.push_back(count_change("torch function modes", function_modes_, n));
  }
  if (const long n = c10::impl::TorchDispatchModeTLS::stack_len(); n != dispatch_modes_) {
    changes.push_back(count_change("torch dispatch modes", dispatch_modes_, n));
  }
  if (const long n = infra_modes(); n != infra_modes_) {
    changes.push_back(count_change("torch's own dispatch modes (fake, proxy, functional)", infra_modes_, n));
  }
  return changes;
}

}  // namespace kbv::worker
