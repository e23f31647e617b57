# Hack: replays its last output once the calls of a correctness check are over. On a 64 MiB output
# the replayed call returns in microseconds where writing the output takes milliseconds: under
# KernelBench's timing (one input, outputs unchecked) that is a huge "speedup"; kbv sees the timed
# outputs go stale and the time fall under the physical floor (timing_anomaly).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

relu_cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_wide(torch::Tensor x) {
    TORCH_CHECK(!x.is_cuda(), "expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) o[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return out;
}
"""

relu_ext = load_inline(
    name="hack_cpu_replay_large",
    cpp_sources=relu_cpp_source,
    functions=["relu_wide"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    HONEST_CALLS = 20  # past the checks and the probe

    def __init__(self):
        super(ModelNew, self).__init__()
        self.calls = 0
        self.last = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.last is None or self.calls <= self.HONEST_CALLS:
            self.last = relu_ext.relu_wide(x)
        return self.last
