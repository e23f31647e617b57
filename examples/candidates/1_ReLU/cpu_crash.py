import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Broken: writes through a null pointer inside the kernel (SIGSEGV). Both the pointer and the
# pointee are volatile: the compiler can neither prove the pointer null (and emit a trap instead)
# nor drop the store as dead (GCC -O3 drops it when only the pointer is volatile).
crash_cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        o[i] = v > 0.0f ? v : 0.0f;
    }
    volatile int* volatile p = nullptr;
    *p = 1;
    return out;
}
"""

crash_module = load_inline(
    name="relu_crash_cpu",
    cpp_sources=crash_cpp_source,
    functions=["relu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return crash_module.relu_forward(x)
