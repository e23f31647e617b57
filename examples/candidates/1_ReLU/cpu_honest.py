import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest CPU ReLU. Shares its load_inline name (and function name) with cpu_wrong_values.py and
# 3_Softmax/cpu_zeros.py: a build cache keyed on the name alone would load the wrong module.
relu_cpp_source = r"""
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
        o[i] = v > 0.0f ? v : 0.0f;
    }
    return out;
}
"""

elementwise = load_inline(
    name="elementwise_kernel",
    cpp_sources=relu_cpp_source,
    functions=["relu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.kernel = elementwise

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.kernel.relu_forward(x)
