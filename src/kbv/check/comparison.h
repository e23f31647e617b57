// Output comparison (PROTOCOL.md, "Correctness" 3).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace kbv::check {

// max_i |x_i - r_i| / (rms(r) + |r_i|), in float64. The RMS term makes the bound scale-aware:
// zeros never pass an output whose values are all small. Where r is non-finite, x must hold the
// same non-finite value; where r is finite, a non-finite x is an infinite error. Non-floating
// outputs compare exactly (0 or infinity). `reference_rms` overrides rms(r) (for sketches,
// whose few sampled points estimate it poorly).
double scaled_error(const at::Tensor& x, const at::Tensor& r, std::optional<double> reference_rms = std::nullopt);

// Root mean square of the finite entries, in float64.
double finite_rms(const at::Tensor& r);

// max |x - r| in float64 (NaN where any difference is NaN), as KernelBench reports it.
double max_abs_difference(const at::Tensor& x, const at::Tensor& r);

// torch.allclose(x, r, rtol, atol) with equal_nan=False, as KernelBench calls it.
bool allclose(const at::Tensor& x, const at::Tensor& r, double atol, double rtol);

// The largest scaled error over paired outputs.
double scaled_error(const std::vector<at::Tensor>& xs, const std::vector<at::Tensor>& rs);

// Why `outputs` cannot be compared with `reference` at all (count, shape, dtype), or nullopt.
std::optional<std::string> structure_mismatch(const std::vector<at::Tensor>& outputs,
                                              const std::vector<at::Tensor>& reference);

// True when every entry of every tensor is finite.
bool all_finite(const std::vector<at::Tensor>& tensors);

}  // namespace kbv::check
