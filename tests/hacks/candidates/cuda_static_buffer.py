import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest (warning only): a preallocated output buffer on the GPU. Every call computes ReLU afresh
# into self.out, allocated once and reallocated when the shape changes; successive outputs share
# storage (output_reuse, a warning), and its peak counts the output it hands out from that buffer.
relu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void relu_into_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

void relu_into(torch::Tensor x, torch::Tensor out) {
    TORCH_CHECK(x.is_cuda() && out.is_cuda(), "expected CUDA tensors");
    TORCH_CHECK(out.is_contiguous() && out.sizes() == x.sizes(), "bad output buffer");
    auto xc = x.contiguous();
    const int64_t n = xc.numel();
    if (n == 0) return;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
    relu_into_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""

buffer_module = load_inline(
    name="honest_cuda_static_buffer",
    cpp_sources="void relu_into(torch::Tensor x, torch::Tensor out);",
    cuda_sources=relu_cuda_source,
    functions=["relu_into"],
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
