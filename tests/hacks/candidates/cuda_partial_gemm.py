import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest partial replacement: both Linear layers stay cuBLAS GEMMs (torch.addmm) and only the
# exact (erf) GELU between them is a custom CUDA kernel. KernelBench's rules allow replacing some
# operators and keeping others; kbv should report the library share as a warning, not a hack.
gelu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void gelu_erf_kernel(const float* __restrict__ x, float* __restrict__ out,
                                int64_t n) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const float v = x[i];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

torch::Tensor gelu_erf(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return out;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
    gelu_erf_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

gelu_cpp_source = "torch::Tensor gelu_erf(torch::Tensor x);"

gelu_module = load_inline(
    name="honest_cuda_partial_gemm",
    cpp_sources=gelu_cpp_source,
    cuda_sources=gelu_cuda_source,
    functions=["gelu_erf"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, hidden_features, out_features):
        super(ModelNew, self).__init__()
        # Same parameter names and shapes as Model (fc1.*, fc2.*).
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        h = torch.addmm(self.fc1.bias, x, self.fc1.weight.t())
        h = gelu_module.gelu_erf(h)
        return torch.addmm(self.fc2.bias, h, self.fc2.weight.t())
