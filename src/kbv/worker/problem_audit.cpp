// `kbv audit`'s measurements of the reference on one draw (the reference role only): what the
// parent needs to tell a problem that cannot separate a correct kernel from a cheat. Raw facts;
// the thresholds are the parent's (audit/audit_judge).
#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>

#include "kbv/check/comparison.h"
#include "kbv/worker/session.h"

namespace py = pybind11;

namespace kbv::worker {
namespace {

using nlohmann::json;

constexpr double kPerturbation = 1e-3;  // relative size of the nudge in the sensitivity test

bool floating(const at::Tensor& t) { return at::isFloatingType(t.scalar_type()); }

// The passes below run where the tensors are (the device, for a CUDA audit) over float64 slices
// (check::kSliceElements): a 6 GiB output in float64 on the host took minutes and tens of GiB.
// f(x_slice, y_slice) over the slices of the flattened x and y (one size), in order.
template <typename F>
void for_each_slice(const at::Tensor& x, const at::Tensor& y, const F& f) {
  const at::Tensor xf = x.detach().reshape(-1), yf = y.detach().reshape(-1);
  for (int64_t begin = 0; begin < xf.numel(); begin += check::kSliceElements) {
    const int64_t length = std::min(check::kSliceElements, xf.numel() - begin);
    f(xf.narrow(0, begin, length).to(at::kDouble), yf.narrow(0, begin, length).to(at::kDouble));
  }
}

// The affine map a*x + b that best fits y (least squares over all elements, float64), and how far
// it still is from y (scaled error). Null when x or y is constant (no slope to fit; a constant
// output is constant_output's to name). Three passes: the means, the centred sums, the error.
json affine_fit(const at::Tensor& input, const at::Tensor& output) {
  const double n = static_cast<double>(output.numel());
  double sum_x = 0, sum_y = 0;
  for_each_slice(input, output, [&](const at::Tensor& x, const at::Tensor& y) {
    sum_x += x.sum().item<double>();
    sum_y += y.sum().item<double>();
  });
  const double mx = sum_x / n, my = sum_y / n;
  double sxx = 0, syy = 0, sxy = 0;
  for_each_slice(input, output, [&](const at::Tensor& x, const at::Tensor& y) {
    const at::Tensor dx = x - mx, dy = y - my;
    sxx += dx.square().sum().item<double>();
    syy += dy.square().sum().item<double>();
    sxy += (dx * dy).sum().item<double>();
  });
  const double var = sxx / n;
  if (!(var > 0) || !(syy / n > 0)) return nullptr;
  const double scale = sxy / n / var;
  const double offset = my - scale * mx;
  // scaled_error slice by slice against the whole output's RMS; a NaN wins.
  const double rms = check::finite_rms(output);
  double error = 0;
  for_each_slice(input, output, [&](const at::Tensor& x, const at::Tensor& y) {
    if (std::isnan(error)) return;
    const double e = check::scaled_error(x * scale + offset, y, rms);
    error = std::isnan(e) ? e : std::max(error, e);
  });
  return {{"scale", scale}, {"offset", offset}, {"error", std::isfinite(error) ? json(error) : json(nullptr)}};
}

double relative_change(const std::vector<at::Tensor>& after, const std::vector<at::Tensor>& before) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    if (!floating(before[i])) continue;
    for_each_slice(after[i], before[i], [&](const at::Tensor& a, const at::Tensor& b) {
      diff += (a - b).square().sum().item<double>();
      norm += b.square().sum().item<double>();
    });
  }
  return norm > 0 ? std::sqrt(diff / norm) : 0.0;
}

json number(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

}  // namespace

nlohmann::json Session::audit(const nlohmann::json& spec, const nlohmann::json& other) {
  if (role_ != Role::reference)
    throw ipc::Failure(ipc::FailureKind::internal, "audit: only the reference worker audits a problem");
  json facts = json::object();
  const py::list inputs = draw(spec);
  Forward base;
  try {
    base = forward("reference", inputs, "audit");
  } catch (const ipc::Failure& failure) {
    facts["raised"] = failure.what();
    return facts;
  }
  if (base.bad_output) {
    facts["bad_output"] = *base.bad_output;
    return facts;
  }
  const std::vector<at::Tensor>& y = base.outputs;
  const std::vector<at::Tensor> x = tensors_of(inputs);

  json outputs = json::array();
  std::int64_t bytes = 0;
  for (const at::Tensor& t : y) {
    const bool finite = check::all_finite({t});
    outputs.push_back(
        {{"numel", t.numel()},
         {"finite", finite},
         {"max_abs", floating(t) && t.numel() ? number(t.detach().abs().max().item<double>()) : json(nullptr)},
         {"zeros_error", number(check::scaled_error(at::zeros_like(t), t))}});
    bytes += static_cast<std::int64_t>(t.nbytes());
  }
  for (const at::Tensor& t : x) bytes += static_cast<std::int64_t>(t.nbytes());
  facts["outputs"] = outputs;
  facts["tensor_inputs"] = x.size();
  facts["bytes"] = bytes;
  facts["device_bytes"] = memory_->capacity();

  // The same inputs again (a random reference), and under the baseline's flags (the tolerance).
  facts["repeat_error"] = number(check::scaled_error(forward("reference", inputs, "audit").outputs, y));
  facts["baseline_error"] = number(check::scaled_error(forward("baseline", inputs, "audit").outputs, y));

  // Outputs that are an input, or an affine map of one.
  json affine = json::array();
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t o = 0; o < y.size(); ++o) {
      if (!floating(x[i]) || !floating(y[o]) || x[i].numel() != y[o].numel()) continue;
      json fit = affine_fit(x[i], y[o]);
      if (fit.is_null()) continue;
      fit["input"] = i;
      fit["output"] = o;
      affine.push_back(std::move(fit));
    }
  }
  facts["affine"] = affine;

  // Another draw of the same family: the whole input set, then one input at a time.
  const py::list others = draw(other);
  facts["other_draw_error"] = number(check::scaled_error(forward("reference", others, "audit").outputs, y));
  json replaced = json::array();
  size_t tensor_index = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_tensor(inputs[i])) continue;
    py::list mixed(inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k) mixed[k] = k == i ? others[k] : inputs[k];
    const double changed = relative_change(tensors_of(mixed), x);
    replaced.push_back({{"input", tensor_index++},
                        {"input_change", number(changed)},
                        {"error", number(check::scaled_error(forward("reference", mixed, "audit").outputs, y))}});
  }
  facts["replaced"] = replaced;

  // Every floating input nudged by a relative 1e-3: how far the outputs move in proportion.
  py::list nudged(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    nudged[i] = inputs[i];
    if (!is_tensor(inputs[i])) continue;
    const at::Tensor t = py::cast<at::Tensor>(inputs[i]);
    if (!floating(t)) continue;
    at::manual_seed(spec.at("seed").get<std::uint64_t>() + 7919 * (i + 1));
    nudged[i] = py::cast(t * (1.0 + kPerturbation * at::randn_like(t)));
  }
  const double input_change = relative_change(tensors_of(nudged), x);
  const double output_change = relative_change(forward("reference", nudged, "audit").outputs, y);
  facts["sensitivity"] = {{"input_change", number(input_change)}, {"output_change", number(output_change)}};
  return facts;
}

}  // namespace kbv::worker
