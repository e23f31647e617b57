import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Broken: the kernel never returns (spins on a volatile flag that nothing clears).
hang_cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    volatile bool spinning = true;
    while (spinning) {
    }
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

hang_module = load_inline(
    name="relu_hang_cpu",
    cpp_sources=hang_cpp_source,
    functions=["relu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return hang_module.relu_forward(x)
