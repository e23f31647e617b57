# Honest C++ ReLU that times itself with a host clock (std::chrono) and keeps the figure: correct
# and clean at run time, but a kernel has no use for host clocks other than to sense the timer,
# so the static screen leaves a host_timing warning for a person to read.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

relu_cpp_source = r"""
#include <torch/extension.h>
#include <chrono>

static double last_seconds = 0.0;

torch::Tensor relu_timed(torch::Tensor x) {
    TORCH_CHECK(!x.is_cuda(), "expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    const auto start = std::chrono::steady_clock::now();
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) o[i] = in[i] > 0.0f ? in[i] : 0.0f;
    last_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
}
"""

relu_ext = load_inline(
    name="honest_cpu_self_timing",
    cpp_sources=relu_cpp_source,
    functions=["relu_timed"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_timed(x)
