#include "kbv/check/comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

namespace kbv::check {
namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int64_t kGrain = 1 << 16;

std::string shape_text(at::IntArrayRef sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

// The parent compares outputs of hundreds of MiB on the CPU: the tensor expressions below make a
// float64 temporary per step (about 10 passes over twice the output's size), one fused pass per
// quantity does the same arithmetic per element. Taken for contiguous CPU tensors of one
// floating dtype; anything else (device tensors in the worker, mixed dtypes) uses the expressions.
bool fusable(const at::Tensor& x, const at::Tensor& r) {
  return x.device().is_cpu() && r.device().is_cpu() && x.scalar_type() == r.scalar_type() &&
         at::isFloatingType(r.scalar_type()) && x.is_contiguous() && r.is_contiguous() && x.numel() == r.numel();
}

struct SquareSum {
  double sum = 0;
  int64_t count = 0;
};

double fused_finite_rms(const at::Tensor& r) {
  SquareSum total;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, r.scalar_type(), "finite_rms", [&] {
    const scalar_t* data = r.const_data_ptr<scalar_t>();
    total = at::parallel_reduce(
        int64_t{0}, r.numel(), kGrain, SquareSum{},
        [&](int64_t begin, int64_t end, SquareSum part) {
          for (int64_t i = begin; i < end; ++i) {
            const double v = static_cast<double>(data[i]);
            if (std::isfinite(v)) {
              part.sum += v * v;
              ++part.count;
            }
          }
          return part;
        },
        [](SquareSum a, SquareSum b) {
          return SquareSum{a.sum + b.sum, a.count + b.count};
        });
  });
  return total.count == 0 ? 0.0 : std::sqrt(total.sum / static_cast<double>(total.count));
}

// The larger of two values; a NaN wins, as in torch's max.
double worse(double a, double b) { return std::isnan(a) || a > b ? a : b; }

// The largest `value(x_i, r_i)` in float64, over contiguous CPU tensors of one floating dtype;
// a NaN value wins, as in torch's max.
template <typename F>
double max_over_pairs(const at::Tensor& x, const at::Tensor& r, const F& value) {
  double worst = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, r.scalar_type(), "max_over_pairs", [&] {
    const scalar_t* xs = x.const_data_ptr<scalar_t>();
    const scalar_t* rs = r.const_data_ptr<scalar_t>();
    worst = at::parallel_reduce(
        int64_t{0}, r.numel(), kGrain, 0.0,
        [&](int64_t begin, int64_t end, double part) {
          for (int64_t i = begin; i < end; ++i) {
            const double v = value(static_cast<double>(xs[i]), static_cast<double>(rs[i]));
            if (std::isnan(v)) return v;
            part = std::max(part, v);
          }
          return part;
        },
        worse);
  });
  return worst;
}

double fused_scaled_error(const at::Tensor& x, const at::Tensor& r, double rms) {
  return max_over_pairs(x, r, [rms](double xv, double rv) {
    if (!std::isfinite(rv)) return xv == rv || (std::isnan(xv) && std::isnan(rv)) ? 0.0 : kInfinity;
    if (!std::isfinite(xv)) return kInfinity;
    const double diff = std::abs(xv - rv);
    const double scale = std::abs(rv) + rms;
    return scale > 0 ? diff / scale : (diff > 0 ? kInfinity : 0.0);
  });
}

double fused_max_abs_difference(const at::Tensor& x, const at::Tensor& r) {
  return max_over_pairs(x, r, [](double xv, double rv) { return std::abs(xv - rv); });
}

// torch.isclose's arithmetic per element (TensorCompare.cpp): x == r, or a finite |x - r| within
// atol + |rtol * r|, each step rounded to the tensors' dtype as its tensor steps are; beside it
// the float64 difference. Float and double only: for half types torch rounds every intermediate
// to the half type.
template <typename T>
Closeness fused_closeness(const at::Tensor& x, const at::Tensor& r, double atol, double rtol) {
  const T* xs = x.const_data_ptr<T>();
  const T* rs = r.const_data_ptr<T>();
  const T a = static_cast<T>(atol), q = static_cast<T>(rtol);
  return at::parallel_reduce(
      int64_t{0}, r.numel(), kGrain, Closeness{},
      [&](int64_t begin, int64_t end, Closeness part) {
        for (int64_t i = begin; i < end; ++i) {
          const T allowed = a + std::abs(q * rs[i]);
          const T actual = std::abs(xs[i] - rs[i]);
          part.allclose = part.allclose && (xs[i] == rs[i] || (std::isfinite(actual) && actual <= allowed));
          part.max_abs_difference =
              worse(part.max_abs_difference, std::abs(static_cast<double>(xs[i]) - static_cast<double>(rs[i])));
        }
        return part;
      },
      [](Closeness p, Closeness q2) {
        return Closeness{p.allclose && q2.allclose, worse(p.max_abs_difference, q2.max_abs_difference)};
      });
}

bool fused_all_finite(const at::Tensor& t) {
  bool finite = true;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, t.scalar_type(), "all_finite", [&] {
    const scalar_t* data = t.const_data_ptr<scalar_t>();
    finite = at::parallel_reduce(
        int64_t{0}, t.numel(), kGrain, true,
        [&](int64_t begin, int64_t end, bool part) {
          for (int64_t i = begin; i < end && part; ++i) part = std::isfinite(static_cast<double>(data[i]));
          return part;
        },
        [](bool a, bool b) { return a && b; });
  });
  return finite;
}

// The largest `slice_value(x_slice, r_slice)` over the slices; a NaN wins.
template <typename F>
double max_over_slices(const at::Tensor& x, const at::Tensor& r, const F& slice_value) {
  if (x.numel() != r.numel()) return kInfinity;
  const at::Tensor xf = x.reshape(-1), rf = r.reshape(-1);
  double worst = 0;
  for (int64_t begin = 0; begin < rf.numel(); begin += kSliceElements) {
    const int64_t length = std::min(kSliceElements, rf.numel() - begin);
    const double value = slice_value(xf.narrow(0, begin, length), rf.narrow(0, begin, length));
    if (std::isnan(value)) return value;
    worst = std::max(worst, value);
  }
  return worst;
}

double slice_scaled_error(const at::Tensor& x, const at::Tensor& r, double rms) {
  const at::Tensor xd = x.to(at::kDouble);
  const at::Tensor rd = r.to(at::kDouble);
  const at::Tensor finite = at::isfinite(rd);
  if (!finite.all().item<bool>()) {
    // Same non-finite value required: NaN where NaN, +inf where +inf, -inf where -inf.
    const at::Tensor same = at::logical_or(at::logical_and(at::isnan(xd), at::isnan(rd)), at::eq(xd, rd));
    if (!at::logical_or(finite, same).all().item<bool>()) return kInfinity;
  }
  const at::Tensor xs = at::where(finite, xd, 0.0);
  const at::Tensor rs = at::where(finite, rd, 0.0);
  if (!at::isfinite(xs).all().item<bool>()) return kInfinity;
  const at::Tensor diff = (xs - rs).abs_();
  const at::Tensor scale = rs.abs().add_(rms);
  // Where the scale is zero (an exactly zero output, everywhere zero), only exact zeros pass.
  const at::Tensor ratio = at::where(scale > 0, diff / scale, at::where(diff > 0, kInfinity, 0.0));
  return ratio.max().item<double>();
}

constexpr int64_t kChunkElements = int64_t{1} << 26;

bool chunkable(const at::Tensor& r) { return r.scalar_type() == at::kFloat || r.scalar_type() == at::kDouble; }

}  // namespace

std::optional<double> chunked_rms(const at::Tensor& r) {
  if (!chunkable(r)) return std::nullopt;
  const at::Tensor rf = r.reshape(-1);
  std::vector<at::Tensor> squares;  // vector_norm casts each chunk to float64 as it reads it
  for (int64_t begin = 0; begin < rf.numel(); begin += kChunkElements) {
    const at::Tensor chunk = rf.narrow(0, begin, std::min(kChunkElements, rf.numel() - begin));
    squares.push_back(at::linalg_vector_norm(chunk, 2, {}, false, at::kDouble).square());
  }
  const double sum = at::stack(squares).sum().item<double>();
  if (!std::isfinite(sum)) return std::nullopt;
  return std::sqrt(sum / static_cast<double>(rf.numel()));
}

std::optional<double> chunked_scaled_error(const at::Tensor& x, const at::Tensor& r, double rms) {
  if (!chunkable(r) || x.scalar_type() != r.scalar_type() || x.numel() != r.numel()) return std::nullopt;
  const bool single = r.scalar_type() == at::kFloat;
  const double lowest = single ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
  const double highest = single ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  if (!(rms >= lowest && rms <= highest / 4)) return std::nullopt;
  const at::Tensor xf = x.reshape(-1), rf = r.reshape(-1);
  std::vector<at::Tensor> maxima;  // per chunk: the largest ratio, the largest scale
  for (int64_t begin = 0; begin < rf.numel(); begin += kChunkElements) {
    const int64_t length = std::min(kChunkElements, rf.numel() - begin);
    const at::Tensor rc = rf.narrow(0, begin, length);
    const at::Tensor scale = rc.abs().add_(rms);
    const at::Tensor ratio = at::sub(xf.narrow(0, begin, length), rc).abs_().div_(scale);
    maxima.push_back(at::stack({ratio.amax(), scale.amax()}));
  }
  const at::Tensor worst = at::stack(maxima).amax(0).to(at::kDouble).cpu();  // the one read
  const double ratio = worst[0].item<double>(), scale = worst[1].item<double>();
  if (!std::isfinite(ratio) || !std::isfinite(scale)) return std::nullopt;
  return ratio;
}

double finite_rms(const at::Tensor& r) {
  if (r.device().is_cpu() && r.is_contiguous() && at::isFloatingType(r.scalar_type())) return fused_finite_rms(r);
  if (const std::optional<double> rms = chunked_rms(r)) return *rms;
  const at::Tensor rf = r.reshape(-1);
  double sum = 0;
  int64_t count = 0;
  for (int64_t begin = 0; begin < rf.numel(); begin += kSliceElements) {
    const at::Tensor rd = rf.narrow(0, begin, std::min(kSliceElements, rf.numel() - begin)).to(at::kDouble);
    if (!at::isFloatingType(r.scalar_type())) {
      sum += rd.square().sum().item<double>();
      count += rd.numel();
      continue;
    }
    const at::Tensor finite = at::isfinite(rd);
    count += finite.sum().item<int64_t>();
    sum += at::where(finite, rd, 0.0).square().sum().item<double>();
  }
  return count == 0 ? 0.0 : std::sqrt(sum / static_cast<double>(count));
}

double scaled_error(const at::Tensor& x, const at::Tensor& r, std::optional<double> reference_rms) {
  if (x.sizes() != r.sizes()) return kInfinity;
  if (x.numel() == 0) return 0.0;
  if (!at::isFloatingType(r.scalar_type())) return at::equal(x, r) ? 0.0 : kInfinity;
  if (fusable(x, r)) return fused_scaled_error(x, r, reference_rms.value_or(fused_finite_rms(r)));
  const double rms = reference_rms.value_or(finite_rms(r));
  if (const std::optional<double> error = chunked_scaled_error(x, r, rms)) return *error;
  return max_over_slices(x, r,
                         [rms](const at::Tensor& xs, const at::Tensor& rs) { return slice_scaled_error(xs, rs, rms); });
}

double scaled_error(const std::vector<at::Tensor>& xs, const std::vector<at::Tensor>& rs,
                    const std::vector<double>& reference_rms) {
  double worst = 0.0;
  for (size_t i = 0; i < xs.size() && i < rs.size(); ++i) {
    const std::optional<double> rms = i < reference_rms.size() ? std::optional<double>(reference_rms[i]) : std::nullopt;
    worst = std::max(worst, scaled_error(xs[i], rs[i], rms));
  }
  return worst;
}

Closeness closeness(const at::Tensor& x, const at::Tensor& r, double atol, double rtol) {
  if (x.numel() == 0) return {};
  const bool fuse = fusable(x, r) && x.sizes() == r.sizes();
  if (fuse && r.scalar_type() == at::kFloat) return fused_closeness<float>(x, r, atol, rtol);
  if (fuse && r.scalar_type() == at::kDouble) return fused_closeness<double>(x, r, atol, rtol);
  Closeness result;
  result.allclose = at::allclose(x, r, rtol, atol, /*equal_nan=*/false);
  result.max_abs_difference =
      fuse ? fused_max_abs_difference(x, r) : max_over_slices(x, r, [](const at::Tensor& xs, const at::Tensor& rs) {
        return (xs.to(at::kDouble) - rs.to(at::kDouble)).abs().max().item<double>();
      });
  return result;
}

Closeness closeness(const std::vector<at::Tensor>& xs, const std::vector<at::Tensor>& rs, double atol, double rtol) {
  Closeness total;
  for (size_t i = 0; i < xs.size() && i < rs.size(); ++i) {
    const Closeness c = closeness(xs[i], rs[i], atol, rtol);
    total = {total.allclose && c.allclose, worse(total.max_abs_difference, c.max_abs_difference)};
  }
  return total;
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
    if (!at::isFloatingType(t.scalar_type())) continue;
    if (t.device().is_cpu() && t.is_contiguous() ? !fused_all_finite(t) : !at::isfinite(t).all().item<bool>())
      return false;
  }
  return true;
}

OutputComparison compare_outputs(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& reference,
                                 const std::vector<double>& reference_rms, bool scaled, double atol, double rtol) {
  OutputComparison result;
  result.mismatch = structure_mismatch(outputs, reference);
  if (result.mismatch) return result;
  if (scaled) {
    result.error = scaled_error(outputs, reference, reference_rms);
    return result;
  }
  const Closeness c = closeness(outputs, reference, atol, rtol);
  result.error = c.max_abs_difference;
  result.allclose = c.allclose;
  return result;
}

nlohmann::json to_json(const OutputComparison& comparison) {
  if (comparison.mismatch) return {{"mismatch", *comparison.mismatch}};
  // A non-finite error is written as null (JSON has neither), read back as infinity: a failure.
  return {{"error", comparison.error}, {"allclose", comparison.allclose}};
}

OutputComparison comparison_from_json(const nlohmann::json& json) {
  OutputComparison result;
  if (json.contains("mismatch")) {
    result.mismatch = json.at("mismatch").get<std::string>();
    return result;
  }
  const nlohmann::json& error = json.at("error");
  result.error = error.is_number() ? error.get<double>() : kInfinity;
  result.allclose = json.at("allclose");
  return result;
}

}  // namespace kbv::check
