import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

# A candidate that writes its sources into a fresh temporary folder and builds them with `load`, as
# LLM-written kernels often do: a new path in every process. Its evaluation after `kbv compile`
# must find it built, not compile it again (tests/eval/compile_test.cpp).
RELU_SOURCE = r"""
#include <torch/extension.h>
#include "relu_impl.h"
torch::Tensor relu_forward(torch::Tensor x) { return kbv_test::relu(x); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu_forward", &relu_forward); }
"""

# Beside the source and included by it: it must come along wherever the source is built.
RELU_HEADER = r"""
#pragma once
namespace kbv_test {
inline torch::Tensor relu(const torch::Tensor& x) { return x.clamp_min(0); }
}
"""

folder = tempfile.mkdtemp(prefix="relu_ext_")
with open(os.path.join(folder, "relu.cpp"), "w") as f:
    f.write(RELU_SOURCE)
with open(os.path.join(folder, "relu_impl.h"), "w") as f:
    f.write(RELU_HEADER)
relu_extension = load(name="kbv_temp_folder_sources", sources=[os.path.join(folder, "relu.cpp")], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return relu_extension.relu_forward(x)
