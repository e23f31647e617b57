#include "kbv/check/comparison.h"

#include <cmath>
#include <limits>

#include <ATen/ATen.h>

namespace kbv::check {
namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();

std::string shape_text(at::IntArrayRef sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}
}  // namespace

double finite_rms(const at::Tensor& r) {
  if (!at::isFloatingType(r.scalar_type())) return std::sqrt(r.to(at::kDouble).square().mean().item<double>());
  const at::Tensor rd = r.to(at::kDouble);
  const at::Tensor finite = at::isfinite(rd);
  const auto count = finite.sum().item<int64_t>();
  if (count == 0) return 0.0;
  return std::sqrt(at::where(finite, rd, 0.0).square().sum().item<double>() / static_cast<double>(count));
}

double scaled_error(const at::Tensor& x, const at::Tensor& r, std::optional<double> reference_rms) {
  if (x.numel() == 0) return 0.0;
  if (!at::isFloatingType(r.scalar_type())) return at::equal(x, r) ? 0.0 : kInfinity;
  const at::Tensor xd = x.to(at::kDouble);
  const at::Tensor rd = r.to(at::kDouble);
  const at::Tensor finite = at::isfinite(rd);
  if (!finite.all().item<bool>()) {
    // Same non-finite value required: NaN where NaN, +inf where +inf, -inf where -inf.
    const at::Tensor nonfinite = at::logical_not(finite);
    const at::Tensor same = at::logical_or(at::logical_and(at::isnan(xd), at::isnan(rd)), at::eq(xd, rd));
    if (!at::logical_or(finite, same).all().item<bool>()) return kInfinity;
  }
  const at::Tensor xs = at::where(finite, xd, 0.0);
  const at::Tensor rs = at::where(finite, rd, 0.0);
  if (!at::isfinite(xs).all().item<bool>()) return kInfinity;
  const double rms = reference_rms.value_or(finite_rms(r));
  const at::Tensor diff = (xs - rs).abs_();
  const at::Tensor scale = rs.abs().add_(rms);
  // Where the scale is zero (an exactly zero output, everywhere zero), only exact zeros pass.
  const at::Tensor ratio = at::where(scale > 0, diff / scale, at::where(diff > 0, kInfinity, 0.0));
  return ratio.max().item<double>();
}

double scaled_error(const std::vector<at::Tensor>& xs, const std::vector<at::Tensor>& rs) {
  double worst = 0.0;
  for (size_t i = 0; i < xs.size() && i < rs.size(); ++i) worst = std::max(worst, scaled_error(xs[i], rs[i]));
  return worst;
}

bool allclose(const at::Tensor& x, const at::Tensor& r, double atol, double rtol) {
  return at::allclose(x, r, rtol, atol, /*equal_nan=*/false);
}

std::optional<std::string> structure_mismatch(const std::vector<at::Tensor>& outputs,
                                              const std::vector<at::Tensor>& reference) {
  if (outputs.size() != reference.size()) {
    return "returned " + std::to_string(outputs.size()) + " outputs, the reference " + std::to_string(reference.size());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string which = outputs.size() > 1 ? "output " + std::to_string(i) + " " : "output ";
    if (outputs[i].sizes() != reference[i].sizes()) {
      return which + "shape " + shape_text(outputs[i].sizes()) + ", expected " + shape_text(reference[i].sizes());
    }
    if (outputs[i].scalar_type() != reference[i].scalar_type()) {
      return which + "dtype " + std::string(c10::toString(outputs[i].scalar_type())) + ", expected " +
             c10::toString(reference[i].scalar_type());
    }
  }
  return std::nullopt;
}

bool all_finite(const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& t : tensors) {
    if (at::isFloatingType(t.scalar_type()) && !at::isfinite(t).all().item<bool>()) return false;
  }
  return true;
}

}  // namespace kbv::check
