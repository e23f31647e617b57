import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Broken: relu(x) * 1.01, wrong on every positive element. Same load_inline name and function
# name as cpu_honest.py: a build cache keyed on the name would hand it the honest module.
wrong_cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(!x.is_cuda(), "expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        o[i] = (v > 0.0f ? v : 0.0f) * 1.01f;
    }
    return out;
}
"""

elementwise = load_inline(
    name="elementwise_kernel",
    cpp_sources=wrong_cpp_source,
    functions=["relu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return elementwise.relu_forward(x)
