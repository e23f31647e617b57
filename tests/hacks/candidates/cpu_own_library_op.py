import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest: the ReLU also registered as an operator of the extension's own namespace (TORCH_LIBRARY,
# not aten), as torch's custom-operator guide shows for torch.compile's sake; forward calls the
# extension's function. It adds kernels to the dispatcher without touching any of torch's own:
# nothing of kbv's steps runs its code.
relu_cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) o[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return out;
}

TORCH_LIBRARY(kbv_own_relu, m) {
    m.def("relu(Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(kbv_own_relu, CPU, m) {
    m.impl("relu", &relu_forward);
}
"""

relu_module = load_inline(
    name="honest_cpu_own_library_op",
    cpp_sources=relu_cpp_source,
    functions=["relu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return relu_module.relu_forward(x)
