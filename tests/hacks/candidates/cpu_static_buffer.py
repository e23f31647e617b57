import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest (warning only): a preallocated output buffer. Every call computes ReLU afresh into
# self.out, allocated once and reallocated when the shape changes, so values always follow the
# input; the only catch is that successive outputs share storage (output_reuse, a warning).
relu_cpp_source = r"""
#include <torch/extension.h>

void relu_into(torch::Tensor x, torch::Tensor out) {
    TORCH_CHECK(!x.is_cuda() && !out.is_cuda(), "expected CPU tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && out.scalar_type() == torch::kFloat32,
                "expected float32");
    TORCH_CHECK(out.is_contiguous() && out.sizes() == x.sizes(), "bad output buffer");
    auto xc = x.contiguous();
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) o[i] = in[i] > 0.0f ? in[i] : 0.0f;
}
"""

buffer_module = load_inline(
    name="honest_cpu_static_buffer",
    cpp_sources=relu_cpp_source,
    functions=["relu_into"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.out = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (self.out is None or self.out.shape != x.shape or self.out.device != x.device
                or self.out.dtype != x.dtype):
            self.out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        buffer_module.relu_into(x, self.out)
        return self.out
