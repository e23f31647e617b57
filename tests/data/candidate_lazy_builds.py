import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# A candidate that builds the way LLM-written kernels often do: not at import. One extension in
# ModelNew.__init__, one on the first forward (inside a try, with a PyTorch fallback), and a third
# whose name is made from forward's input, which exists only at run time. `kbv compile` builds the
# first two ahead and says why not the third (tests/eval/compile_test.cpp).
SCALE_SOURCE = r"""
#include <torch/extension.h>
torch::Tensor twice(torch::Tensor x) { return x * 2; }
"""

RELU_SOURCE = r"""
#include <torch/extension.h>
torch::Tensor relu_forward(torch::Tensor x) { return x.clamp_min(0); }
"""

relu_extension = None


def variant_for(x):
    return load_inline(name=f"kbv_lazy_{str(x.dtype).split('.')[-1]}", cpp_sources=RELU_SOURCE,
                       functions=["relu_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.scale = load_inline(name="kbv_lazy_init", cpp_sources=SCALE_SOURCE, functions=["twice"], verbose=False)

    def forward(self, x):
        global relu_extension
        if relu_extension is None:
            try:
                relu_extension = load_inline(name="kbv_lazy_forward", cpp_sources=RELU_SOURCE,
                                             functions=["relu_forward"], verbose=False)
            except Exception:
                return torch.relu(x)
        return relu_extension.relu_forward(x)
