# LLM habit: load_inline is called inside ModelNew.__init__ and the compiled module is stored on
# self, so the (cached) build runs whenever a model is constructed rather than at import.
# Kernel: float4 grid-stride ReLU, scalar tail, scalar path for unaligned tensors.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

relu_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

// ReLU that keeps NaN (NaN < 0 is false, so NaN passes through like torch.relu).
__device__ __forceinline__ float relu_op(float v) { return v < 0.0f ? 0.0f : v; }

__global__ void relu_kernel(const float* __restrict__ in, float* __restrict__ out, int64_t n,
                            bool use_vec4) {
    const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    int64_t tail_start = 0;
    if (use_vec4) {
        const int64_t n_vec = n / 4;
        const float4* __restrict__ in4 = reinterpret_cast<const float4*>(in);
        float4* __restrict__ out4 = reinterpret_cast<float4*>(out);
        for (int64_t i = tid; i < n_vec; i += stride) {
            float4 v = in4[i];
            v.x = relu_op(v.x);
            v.y = relu_op(v.y);
            v.z = relu_op(v.z);
            v.w = relu_op(v.w);
            out4[i] = v;
        }
        tail_start = n_vec * 4;
    }
    for (int64_t i = tail_start + tid; i < n; i += stride) out[i] = relu_op(in[i]);
}

torch::Tensor relu_forward(torch::Tensor input) {
    TORCH_CHECK(input.is_cuda(), "input must be a CUDA tensor");
    TORCH_CHECK(input.scalar_type() == torch::kFloat32, "input must be float32");
    auto x = input.contiguous();
    auto out = torch::empty_like(x);
    const int64_t n = x.numel();
    if (n == 0) return out;
    const bool use_vec4 = (reinterpret_cast<uintptr_t>(x.data_ptr<float>()) % 16 == 0) &&
                          (reinterpret_cast<uintptr_t>(out.data_ptr<float>()) % 16 == 0);
    const int threads = 256;
    const int64_t work = use_vec4 ? (n + 3) / 4 : n;
    const int blocks = static_cast<int>(std::min<int64_t>((work + threads - 1) / threads, 8192));
    relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n, use_vec4);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

relu_cpp = "torch::Tensor relu_forward(torch::Tensor input);"


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        # Compile the custom kernel when the model is created.
        self.relu_ext = load_inline(
            name="corpus_relu6g_init_build",
            cpp_sources=relu_cpp,
            cuda_sources=relu_source,
            functions=["relu_forward"],
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu_ext.relu_forward(x)
