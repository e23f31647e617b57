#include "kbv/eval/worker_port.h"

namespace kbv::eval {

std::vector<std::vector<at::Tensor>> outputs_by_mode(const Reply& reply, std::vector<std::optional<std::string>>* bad) {
  std::vector<std::vector<at::Tensor>> by_mode;
  size_t next = 0;
  for (const nlohmann::json& result : reply.header.at("results")) {
    std::vector<at::Tensor> outputs;
    if (result.contains("bad_output")) {
      if (bad) bad->push_back(result.at("bad_output").get<std::string>());
    } else {
      if (bad) bad->push_back(std::nullopt);
      // A mode judged in the worker (errors_against_first) holds its error, not outputs.
      const size_t count = result.contains("outputs") ? result["outputs"].size() : 0;
      for (size_t i = 0; i < count; ++i) outputs.push_back(reply.tensors.at(next++));
    }
    by_mode.push_back(std::move(outputs));
  }
  return by_mode;
}

}  // namespace kbv::eval
