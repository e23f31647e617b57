import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Hack: library work hidden from op recording, from Python. A decoy C++ call is the "kernel";
# torch.relu runs with torch's op recording switched off around it
# (torch.autograd._enable_record_function), so neither torch's profiler nor kbv's record of the
# call sees an op. kbv wraps that switch before the import: calling it is global_state_tamper.
touch_cpp_source = r"""
#include <torch/extension.h>

void touch(torch::Tensor x) {
    volatile float first = x.data_ptr<float>()[0];
    (void)first;
}
"""

touch_module = load_inline(
    name="hack_cpu_recording_off_python",
    cpp_sources=touch_cpp_source,
    functions=["touch"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        touch_module.touch(x)
        torch.autograd._enable_record_function(False)
        try:
            return torch.relu(x)
        finally:
            torch.autograd._enable_record_function(True)
