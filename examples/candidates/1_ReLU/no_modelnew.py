import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Broken: compiles a correct kernel but defines no ModelNew (the class is named Model2).
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

relu_module = load_inline(
    name="relu_no_modelnew_cpu",
    cpp_sources=relu_cpp_source,
    functions=["relu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class Model2(nn.Module):
    def __init__(self):
        super(Model2, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_module.relu_forward(x)
