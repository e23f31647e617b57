// Output comparison (PROTOCOL.md, "Correctness" 3).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace kbv::check {

// Passes over tensors that may be large (device tensors in the worker, mixed dtypes, strided views)
// that no faster pass takes work on float64 slices of this many elements of the flattened tensors,
// so that their temporaries take a few times a slice, not a few times the tensor (8 GiB of them for
// a 512 MiB float32 output on the device).
inline constexpr int64_t kSliceElements = int64_t{1} << 24;

// max_i |x_i - r_i| / (rms(r) + |r_i|), in float64 (float and double tensors other than contiguous
// CPU ones: in their own dtype where every value is finite, within 1e-6 of it relative). The RMS
// term makes the bound scale-aware: zeros never pass an output whose values are all small. Where r
// is non-finite, x must hold the same non-finite value; where r is finite, a non-finite x is an
// infinite error. Non-floating outputs compare exactly (0 or infinity); different shapes do not
// compare (infinity).
// `reference_rms` overrides rms(r) (for sketches, whose few sampled points estimate it poorly,
// and for a reference judged many times).
double scaled_error(const at::Tensor& x, const at::Tensor& r, std::optional<double> reference_rms = std::nullopt);

// Root mean square of the finite entries, in float64.
double finite_rms(const at::Tensor& r);

// Float and double tensors the fused pass does not take (on the device: nearly every large output)
// go chunk by chunk in their own dtype, each chunk's result kept where it lies and read once at the
// end: a few passes instead of the slices' twenty in float64 with a host read or two per slice (a
// 6 GiB float32 output on the H200: the scaled error 20 ms instead of 143, the RMS 10 ms instead of
// 55; bench/probes/comparison_probe.py). Both give nullopt where the slices' rules must decide: a
// non-finite entry on either side, an RMS that is not a normal number well inside the dtype's
// range, a difference or scale past it. The ratio's difference and scale are each rounded once in
// the dtype: within a few units in its last place of the float64 ratio (1e-6 of it in float32,
// against tolerances from 1e-4).
std::optional<double> chunked_rms(const at::Tensor& r);
std::optional<double> chunked_scaled_error(const at::Tensor& x, const at::Tensor& r, double rms);

// KernelBench's judgement of one output: torch.allclose(x, r, rtol, atol) with equal_nan=False,
// and the max |x - r| in float64 it reports beside it (NaN where any difference is NaN). One pass
// over both tensors where they are contiguous CPU float or double tensors of the same shape.
struct Closeness {
  bool allclose = true;
  double max_abs_difference = 0;
};
Closeness closeness(const at::Tensor& x, const at::Tensor& r, double atol, double rtol);
// Over paired outputs: allclose where every pair is, the largest difference (a NaN wins).
Closeness closeness(const std::vector<at::Tensor>& xs, const std::vector<at::Tensor>& rs, double atol, double rtol);

// The largest scaled error over paired outputs; `reference_rms`, where given, holds rms(r) per
// output (a reference judged many times).
double scaled_error(const std::vector<at::Tensor>& xs, const std::vector<at::Tensor>& rs,
                    const std::vector<double>& reference_rms = {});

// Why `outputs` cannot be compared with `reference` at all (count, shape, dtype), or nullopt.
std::optional<std::string> structure_mismatch(const std::vector<at::Tensor>& outputs,
                                              const std::vector<at::Tensor>& reference);

// True when every entry of every tensor is finite.
bool all_finite(const std::vector<at::Tensor>& tensors);

// A candidate's outputs against the reference's, as the judgement needs them: why they do not
// compare at all, else the scaled error (scaled comparison) or allclose and max |x - r|
// (allclose). Measured where the outputs lie, in the reference's worker; only these numbers
// cross to the parent.
struct OutputComparison {
  std::optional<std::string> mismatch;
  double error = 0;  // scaled error, or max |x - r| under allclose
  bool allclose = false;
};
// `reference_rms`: rms(r) per output, as the draw measured it (scaled comparison).
OutputComparison compare_outputs(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& reference,
                                 const std::vector<double>& reference_rms, bool scaled, double atol, double rtol);
nlohmann::json to_json(const OutputComparison& comparison);
OutputComparison comparison_from_json(const nlohmann::json& json);

}  // namespace kbv::check
