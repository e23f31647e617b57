import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sum_cpp_source = r"""
#include <torch/extension.h>
#include <vector>

// Sum over `dim`, keepdim=True, with a double accumulator.
torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(!x.is_cuda(), "expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    auto xc = x.contiguous();
    const int64_t nd = xc.dim();
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "dim out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < nd; ++d) inner *= xc.size(d);
    const int64_t r = xc.size(dim);
    std::vector<int64_t> out_shape(xc.sizes().begin(), xc.sizes().end());
    out_shape[dim] = 1;
    auto out = torch::empty(out_shape, xc.options());
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    std::vector<double> acc(inner);
    for (int64_t a = 0; a < outer; ++a) {
        std::fill(acc.begin(), acc.end(), 0.0);
        const float* base = in + a * r * inner;
        for (int64_t k = 0; k < r; ++k) {
            const float* row = base + k * inner;
            for (int64_t b = 0; b < inner; ++b) acc[b] += row[b];
        }
        for (int64_t b = 0; b < inner; ++b) o[a * inner + b] = static_cast<float>(acc[b]);
    }
    return out;
}
"""

sum_module = load_inline(
    name="sum_reduction_cpu",
    cpp_sources=sum_cpp_source,
    functions=["sum_dim_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sum_module.sum_dim_forward(x, self.dim)
