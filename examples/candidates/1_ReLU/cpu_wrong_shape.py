import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Broken: correct values, but the output is flattened to 1-D.
flat_cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_flat_forward(torch::Tensor x) {
    TORCH_CHECK(!x.is_cuda(), "expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    auto xc = x.contiguous();
    const int64_t n = xc.numel();
    auto out = torch::empty({n}, xc.options());
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        o[i] = v > 0.0f ? v : 0.0f;
    }
    return out;
}
"""

flat_module = load_inline(
    name="relu_wrong_shape_cpu",
    cpp_sources=flat_cpp_source,
    functions=["relu_flat_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return flat_module.relu_flat_forward(x)
