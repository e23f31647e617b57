# LLM habit: GELU via the tanh approximation, 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))),
# instead of the exact erf form that nn.functional.gelu uses by default (off by up to ~1e-3).
# Built at module level; float4 grid-stride kernel with a scalar tail and an unaligned path.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

gelu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

// GELU(x) = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
__device__ __forceinline__ float gelu_tanh(float x) {
    const float kAlpha = 0.7978845608028654f;  // sqrt(2 / pi)
    const float kBeta = 0.044715f;
    const float inner = kAlpha * (x + kBeta * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
}

__global__ void gelu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                            bool vec) {
    const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    int64_t start = 0;
    if (vec) {
        const int64_t n4 = n / 4;
        const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
        float4* __restrict__ y4 = reinterpret_cast<float4*>(y);
        for (int64_t i = tid; i < n4; i += stride) {
            float4 v = x4[i];
            v.x = gelu_tanh(v.x);
            v.y = gelu_tanh(v.y);
            v.z = gelu_tanh(v.z);
            v.w = gelu_tanh(v.w);
            y4[i] = v;
        }
        start = n4 * 4;
    }
    for (int64_t i = start + tid; i < n; i += stride) y[i] = gelu_tanh(x[i]);
}

torch::Tensor gelu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return y;
    const bool vec = reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0;
    const int threads = 256;
    const int64_t work = vec ? (n + 3) / 4 : n;
    const int blocks = static_cast<int>(std::min<int64_t>((work + threads - 1) / threads, 8192));
    gelu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

gelu_cpp_source = "torch::Tensor gelu_forward(torch::Tensor x);"

gelu_ext = load_inline(
    name="corpus_gelu_tanh_approx",
    cpp_sources=gelu_cpp_source,
    cuda_sources=gelu_cuda_source,
    functions=["gelu_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gelu_ext.gelu_forward(x)
