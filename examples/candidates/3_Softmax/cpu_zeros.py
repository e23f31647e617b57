import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Broken: returns zeros of the right shape. Every softmax output of a 65536-wide row is ~1.5e-5,
# so zeros are within atol=1e-4 of the reference; a scale-aware tolerance rejects them.
# Shares its load_inline name with 1_ReLU/cpu_honest.py and 1_ReLU/cpu_wrong_values.py.
zeros_cpp_source = r"""
#include <torch/extension.h>

torch::Tensor softmax_forward(torch::Tensor x) {
    TORCH_CHECK(!x.is_cuda(), "expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    auto out = torch::empty(x.sizes(), x.options());
    float* o = out.data_ptr<float>();
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = 0.0f;
    return out;
}
"""

elementwise = load_inline(
    name="elementwise_kernel",
    cpp_sources=zeros_cpp_source,
    functions=["softmax_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return elementwise.softmax_forward(x)
