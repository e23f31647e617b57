import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Small problem. LayerNorm over the last dimension, one 256-thread block per row, exact two-pass
# statistics: block sum -> mean, then block sum of (x - mean)^2 -> variance (no E[x^2] - E[x]^2
# cancellation), then a write pass. Reductions: warp shuffles, then shared memory across warps.
ln_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Every thread returns the block total (same order everywhere); `sh` is reusable afterwards.
__device__ __forceinline__ float block_sum(float v, float* sh) {
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    float t = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) t += sh[w];
    __syncthreads();
    return t;
}

__global__ void __launch_bounds__(kThreads) layernorm_twopass_kernel(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
    float* __restrict__ y, int64_t D, float eps) {
    __shared__ float sh[kWarps];
    const float* __restrict__ xr = x + static_cast<int64_t>(blockIdx.x) * D;
    float* __restrict__ yr = y + static_cast<int64_t>(blockIdx.x) * D;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < D; i += kThreads) s += xr[i];
    const float mean = block_sum(s, sh) / static_cast<float>(D);
    float q = 0.0f;
    for (int64_t i = threadIdx.x; i < D; i += kThreads) {
        const float d = xr[i] - mean;
        q = fmaf(d, d, q);
    }
    const float var = block_sum(q, sh) / static_cast<float>(D);
    const float rstd = 1.0f / sqrtf(var + eps);
    for (int64_t i = threadIdx.x; i < D; i += kThreads)
        yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
}

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "expected CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                    b.scalar_type() == torch::kFloat32,
                "expected float32");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = b.contiguous();
    const int64_t D = wc.numel();
    TORCH_CHECK(bc.numel() == D && xc.dim() >= 1 && xc.size(-1) == D, "shape mismatch");
    auto y = torch::empty_like(xc);
    if (xc.numel() == 0) return y;
    const int64_t rows = xc.numel() / D;
    TORCH_CHECK(rows < (int64_t(1) << 31), "too many rows");
    layernorm_twopass_kernel<<<static_cast<unsigned>(rows), kThreads, 0,
                               at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), D,
        static_cast<float>(eps));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ln_cpp_source = (
    "torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, "
    "double eps);"
)

ln_module = load_inline(
    name="bench_layernorm_twopass_block",
    cpp_sources=ln_cpp_source,
    cuda_sources=ln_cuda_source,
    functions=["layernorm_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super(ModelNew, self).__init__()
        # Same parameter names and shapes as Model (ln.weight, ln.bias).
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ln_module.layernorm_forward(x, self.ln.weight, self.ln.bias, self.ln.eps)
