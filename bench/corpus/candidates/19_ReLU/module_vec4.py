# LLM habit: the honest baseline. The extension is built once, at import, with load_inline at
# module level; the kernel is a float4 grid-stride ReLU with a scalar tail for numel % 4 and a
# scalar path when the tensor is not 16-byte aligned.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

relu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__device__ __forceinline__ float relu1(float v) { return v < 0.0f ? 0.0f : v; }  // keeps NaN

__global__ void relu_vec4_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n,
                                 bool vec) {
    const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    int64_t start = 0;
    if (vec) {
        const int64_t n4 = n >> 2;
        const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
        float4* __restrict__ o4 = reinterpret_cast<float4*>(out);
        for (int64_t i = tid; i < n4; i += stride) {
            float4 v = x4[i];
            v.x = relu1(v.x);
            v.y = relu1(v.y);
            v.z = relu1(v.z);
            v.w = relu1(v.w);
            o4[i] = v;
        }
        start = n4 << 2;
    }
    for (int64_t i = start + tid; i < n; i += stride) out[i] = relu1(x[i]);
}

torch::Tensor relu_vec4_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return out;
    const bool vec = (reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) % 16 == 0) &&
                     (reinterpret_cast<uintptr_t>(out.data_ptr<float>()) % 16 == 0);
    const int threads = 256;
    const int64_t work = vec ? (n + 3) / 4 : n;
    const int blocks = static_cast<int>(std::min<int64_t>((work + threads - 1) / threads, 8192));
    relu_vec4_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), out.data_ptr<float>(), n, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

relu_cpp_source = "torch::Tensor relu_vec4_forward(torch::Tensor x);"

relu_module = load_inline(
    name="corpus_relu6g_module_vec4",
    cpp_sources=relu_cpp_source,
    cuda_sources=relu_cuda_source,
    functions=["relu_vec4_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_module.relu_vec4_forward(x)
