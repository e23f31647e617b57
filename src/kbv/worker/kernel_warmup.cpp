#include "kbv/worker/kernel_warmup.h"

#include <random>
#include <set>

#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>

#include "kbv/check/sketch.h"
#include "kbv/hacks/integrity.h"
#include "kbv/inputs/families.h"
#include "kbv/measure/timer.h"
#include "kbv/worker/session.h"

namespace kbv::worker {
namespace {

// Small enough that no CPU op splits over threads (torch's grain is 32768 elements): the warm-up
// starts no thread the candidate's watch could later count.
constexpr std::int64_t kElements = 4096;

// One parameter set per code path of the family: `heavy` draws Student-t or Laplace values.
std::vector<nlohmann::json> parameter_sets(protocol::Family family) {
  std::mt19937_64 rng(0);
  std::vector<nlohmann::json> sets;
  std::set<std::string> kinds;
  for (int i = 0; i < 32; ++i) {
    nlohmann::json p = inputs::draw_parameters(family, rng);
    if (kinds.insert(p.value("kind", "")).second) sets.push_back(std::move(p));
  }
  return sets;
}

}  // namespace

void warm_kernels(const c10::Device& device, const nlohmann::json& protocol) {
  const at::TensorOptions options = at::TensorOptions().device(device).dtype(at::kFloat);
  // What get_inputs() mostly calls, drawn on the device (draw_standard).
  const at::Tensor x = at::rand({kElements}, options);
  (void)at::randn({kElements}, options);
  std::uint64_t seed = 1;
  for (const char* list : {"families", "fallback_families"}) {
    for (const auto& name : protocol.at(list)) {
      const protocol::Family family = inputs::family_from_name(name.get<std::string>());
      for (const nlohmann::json& p : parameter_sets(family)) (void)inputs::redraw(x, family, p, seed++);
    }
  }
  pybind11::list inputs;
  inputs.append(pybind11::cast(x));
  (void)input_checksum(inputs);
  // The timer's L2 flush (zero_) and the poison (full) fill bytes.
  (void)at::zeros({64}, options.dtype(at::kByte));
  if (protocol.at("detection").at("enabled").get<bool>()) {
    const std::vector<at::Tensor> before = hacks::snapshot({x});
    (void)hacks::mutations(before, {x});
    (void)hacks::nan_introduced(before, {x});
  }
  const nlohmann::json& t = protocol.at("timing");
  if (t.at("check_timed_outputs").get<bool>()) (void)check::sketch({x}, seed, t.at("sketch_points").get<int>(), device);
  (void)x.cpu();  // an output's copy out
  measure::synchronize(device);
}

}  // namespace kbv::worker
