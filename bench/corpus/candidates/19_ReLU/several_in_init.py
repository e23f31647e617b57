# LLM habit: several extensions compiled in __init__. Two load_inline calls build a plain
# elementwise ReLU and a "vectorized" float4 ReLU; forward picks the float4 one when numel % 4 == 0
# and the data pointer is 16-byte aligned, else the scalar one.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

scalar_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void relu_scalar_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const float v = x[i];
        y[i] = v < 0.0f ? 0.0f : v;
    }
}

torch::Tensor relu_scalar(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 16384));
    relu_scalar_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

vec4_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__device__ __forceinline__ float relu1(float v) { return v < 0.0f ? 0.0f : v; }

// Requires n % 4 == 0 and 16-byte aligned input and output (checked on the host).
__global__ void relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y,
                                 int64_t n4) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
         i += stride) {
        float4 v = x[i];
        v.x = relu1(v.x);
        v.y = relu1(v.y);
        v.z = relu1(v.z);
        v.w = relu1(v.w);
        y[i] = v;
    }
}

torch::Tensor relu_vec4(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return y;
    TORCH_CHECK(n % 4 == 0, "relu_vec4 needs numel % 4 == 0");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) % 16 == 0 &&
                    reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0,
                "relu_vec4 needs 16-byte aligned tensors");
    const int64_t n4 = n / 4;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n4 + threads - 1) / threads, 8192));
    relu_vec4_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float4*>(xc.data_ptr<float>()),
        reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.relu_scalar_ext = load_inline(
            name="corpus_relu6g_several_scalar",
            cpp_sources="torch::Tensor relu_scalar(torch::Tensor x);",
            cuda_sources=scalar_cuda_source,
            functions=["relu_scalar"],
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )
        self.relu_vec4_ext = load_inline(
            name="corpus_relu6g_several_vec4",
            cpp_sources="torch::Tensor relu_vec4(torch::Tensor x);",
            cuda_sources=vec4_cuda_source,
            functions=["relu_vec4"],
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        if x.numel() % 4 == 0 and x.data_ptr() % 16 == 0:
            return self.relu_vec4_ext.relu_vec4(x)
        return self.relu_scalar_ext.relu_scalar(x)
