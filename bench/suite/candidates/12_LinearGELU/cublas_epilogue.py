import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Large problem. Partial replacement (allowed by KernelBench's rules): the GEMM x @ W^T is left to
# cuBLAS through torch::matmul (so it runs under whatever matmul precision flags the caller set,
# exactly as the reference's nn.Linear does), and the candidate's own kernel fuses the bias add and
# the exact erf GELU into one pass over the GEMM output (float4, in place on that fresh tensor)
# instead of PyTorch's separate bias and GELU passes.
linear_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__device__ __forceinline__ float gelu_erf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

// y (rows x N, row-major) <- GELU(y + bias[col]). With vec (N % 4 == 0, aligned), each float4
// lies inside one row.
__global__ void bias_gelu_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                 int64_t total, int64_t N, bool vec) {
    const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    if (vec) {
        const int64_t n4 = total / 4, N4 = N / 4;
        float4* __restrict__ y4 = reinterpret_cast<float4*>(y);
        const float4* __restrict__ b4 = reinterpret_cast<const float4*>(bias);
        for (int64_t i = tid; i < n4; i += stride) {
            float4 v = y4[i];
            const float4 b = b4[i % N4];
            v.x = gelu_erf(v.x + b.x);
            v.y = gelu_erf(v.y + b.y);
            v.z = gelu_erf(v.z + b.z);
            v.w = gelu_erf(v.w + b.w);
            y4[i] = v;
        }
    } else {
        for (int64_t i = tid; i < total; i += stride) y[i] = gelu_erf(y[i] + bias[i % N]);
    }
}

torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && bias.is_cuda(), "expected CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                    bias.scalar_type() == torch::kFloat32,
                "expected float32");
    TORCH_CHECK(x.dim() >= 1 && w.dim() == 2 && x.size(-1) == w.size(1) &&
                    bias.numel() == w.size(0),
                "shape mismatch");
    auto bc = bias.contiguous();
    // Library GEMM (cuBLAS); the result is a fresh tensor owned by this call.
    auto y = torch::matmul(x, w.t()).contiguous();
    const int64_t total = y.numel(), N = w.size(0);
    if (total == 0) return y;
    const bool vec = N % 4 == 0 && reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(bc.data_ptr<float>()) % 16 == 0;
    const int threads = 256;
    const int64_t work = vec ? total / 4 : total;
    const int blocks = static_cast<int>(std::min<int64_t>((work + threads - 1) / threads, 16384));
    bias_gelu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), bc.data_ptr<float>(), total, N, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

linear_cpp_source = (
    "torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias);"
)

linear_module = load_inline(
    name="bench_linear_gelu_cublas_epilogue",
    cpp_sources=linear_cpp_source,
    cuda_sources=linear_cuda_source,
    functions=["linear_gelu_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        # Same parameter names and shapes as Model (fc.weight, fc.bias).
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear_module.linear_gelu_forward(x, self.fc.weight, self.fc.bias)
