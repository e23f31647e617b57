import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# A candidate whose build fails inside a try, PyTorch doing the work instead (as LLM-written
# kernels often fall back): its evaluation after `kbv compile` must not build it again, and still
# names the fallback (tests/eval/compile_test.cpp).
RELU_SOURCE = r"""
#include <torch/extension.h>
torch::Tensor relu_forward(torch::Tensor x) { return x.clamp_min(0) }  // the missing ';' fails it
"""

try:
    relu_extension = load_inline(name="kbv_failed_fallback", cpp_sources=RELU_SOURCE, functions=["relu_forward"],
                                 verbose=False)
except Exception:
    relu_extension = None


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        if relu_extension is None:
            return torch.relu(x)
        return relu_extension.relu_forward(x)
