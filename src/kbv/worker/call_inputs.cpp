#include "kbv/worker/call_inputs.h"

#include <cstdint>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

namespace kbv::worker {

bool is_tensor(const py::handle& object) { return THPVariable_Check(object.ptr()); }

std::vector<at::Tensor> tensors_of(const py::list& inputs) {
  std::vector<at::Tensor> tensors;
  for (const py::handle item : inputs) {
    if (is_tensor(item)) tensors.push_back(py::cast<at::Tensor>(item));
  }
  return tensors;
}

namespace {

// A host tensor's sum and sum of magnitudes in float64: fixed blocks each summed in order, the
// blocks' sums added in order. torch's parallel sum splits the work by the process's thread
// count, which the two workers need not share: the last bits then differ, and an honest
// candidate's draw reads as changed by it (CI once named one global_state_tamper on a draw whose
// float64 sum is not exact).
constexpr int64_t kChecksumBlock = int64_t{1} << 16;

std::pair<double, double> host_sums(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  const int64_t n = c.numel();
  const int64_t blocks = (n + kChecksumBlock - 1) / kChecksumBlock;
  std::vector<double> sums(static_cast<size_t>(blocks)), abs_sums(static_cast<size_t>(blocks));
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, c.scalar_type(), "input_checksum", [&] {
    const scalar_t* data = c.const_data_ptr<scalar_t>();
    at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        double sum = 0, abs_sum = 0;
        for (int64_t i = b * kChecksumBlock; i < std::min(n, (b + 1) * kChecksumBlock); ++i) {
          const double v = static_cast<double>(data[i]);
          sum += v;
          abs_sum += std::abs(v);
        }
        sums[static_cast<size_t>(b)] = sum;
        abs_sums[static_cast<size_t>(b)] = abs_sum;
      }
    });
  });
  std::pair<double, double> total{0, 0};
  for (size_t b = 0; b < sums.size(); ++b) {
    total.first += sums[b];
    total.second += abs_sums[b];
  }
  return total;
}

}  // namespace

nlohmann::json input_checksum(const py::list& inputs) {
  double sum = 0, abs_sum = 0;
  for (const py::handle item : inputs) {
    if (!is_tensor(item)) continue;
    const at::Tensor t = py::cast<at::Tensor>(item);
    if (t.is_cuda() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble)) {
      // In the dtype, one pass each, one read: both workers run the same reduction over the same
      // shape on the same device, whose order is fixed, so equal draws give equal bits. A float64
      // sum of a float32 input casts it first, and a verified evaluation takes twenty checksums
      // (bench/probes/comparison_probe.py times both ways).
      const at::Tensor sums = at::stack({t.sum(), at::linalg_vector_norm(t, 1)}).to(at::kDouble).cpu();
      sum += sums[0].item<double>();
      abs_sum += sums[1].item<double>();
      continue;
    }
    if (t.is_cuda()) {
      // Other dtypes accumulate in float64 as the elements are read (bool, which has no abs, is
      // converted).
      const at::Tensor v = t.scalar_type() == at::kBool ? t.to(at::kDouble) : t;
      sum += v.sum(at::kDouble).item<double>();
      abs_sum += v.abs().sum(at::kDouble).item<double>();
      continue;
    }
    const auto [part, abs_part] = host_sums(t);
    sum += part;
    abs_sum += abs_part;
  }
  return {{"sum", sum}, {"abs_sum", abs_sum}};
}

}  // namespace kbv::worker
