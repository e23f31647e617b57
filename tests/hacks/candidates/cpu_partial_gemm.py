import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest partial replacement: both Linear layers stay library GEMMs (torch.addmm) and only the
# exact (erf) GELU between them is a custom C++ loop. KernelBench's rules allow replacing some
# operators and keeping others; kbv should report the library share as a warning, not a hack.
gelu_cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor gelu_erf(torch::Tensor x) {
    TORCH_CHECK(!x.is_cuda(), "expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) {
        const double v = in[i];
        o[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v * M_SQRT1_2)));
    }
    return out;
}
"""

gelu_module = load_inline(
    name="honest_cpu_partial_gemm",
    cpp_sources=gelu_cpp_source,
    functions=["gelu_erf"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, hidden_features, out_features):
        super(ModelNew, self).__init__()
        # Same parameter names and shapes as Model (fc1.*, fc2.*).
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        h = torch.addmm(self.fc1.bias, x, self.fc1.weight.t())
        h = gelu_module.gelu_erf(h)
        return torch.addmm(self.fc2.bias, h, self.fc2.weight.t())
