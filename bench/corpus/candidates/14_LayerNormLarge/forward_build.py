# LLM habit: the extension is compiled on the first forward call and cached in a module-global
# variable (_ln_ext), so the first timed call also pays for the build. Kernel: one warp per row,
# single Welford pass per lane (float4 when aligned), Chan merge over shuffles, then a write pass
# with self.ln.weight / self.ln.bias.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ln_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int kRowsPerBlock = 8;  // one warp per row

__device__ __forceinline__ void welford_add(float& n, float& mean, float& m2, float v) {
    n += 1.0f;
    const float d = v - mean;
    mean += d / n;
    m2 += d * (v - mean);
}

__device__ __forceinline__ void welford_merge(float& n, float& mean, float& m2, float nb,
                                              float meanb, float m2b) {
    if (nb == 0.0f) return;
    if (n == 0.0f) {
        n = nb;
        mean = meanb;
        m2 = m2b;
        return;
    }
    const float nn = n + nb;
    const float d = meanb - mean;
    const float f = nb / nn;
    mean += d * f;
    m2 += m2b + d * d * n * f;
    n = nn;
}

__global__ void __launch_bounds__(32 * kRowsPerBlock) layernorm_warp_kernel(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
    float* __restrict__ y, int64_t rows, int64_t D, float eps, bool vec) {
    const int lane = threadIdx.x & 31;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
    if (row >= rows) return;  // whole warp exits together; no block barrier below
    const float* __restrict__ xr = x + row * D;
    float* __restrict__ yr = y + row * D;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    const int64_t d4 = vec ? D / 4 : 0;
    for (int64_t i = lane; i < d4; i += 32) {
        const float4 v = reinterpret_cast<const float4*>(xr)[i];
        welford_add(n, mean, m2, v.x);
        welford_add(n, mean, m2, v.y);
        welford_add(n, mean, m2, v.z);
        welford_add(n, mean, m2, v.w);
    }
    for (int64_t i = d4 * 4 + lane; i < D; i += 32) welford_add(n, mean, m2, xr[i]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const float nb = __shfl_xor_sync(0xffffffffu, n, off);
        const float meanb = __shfl_xor_sync(0xffffffffu, mean, off);
        const float m2b = __shfl_xor_sync(0xffffffffu, m2, off);
        welford_merge(n, mean, m2, nb, meanb, m2b);
    }
    // Broadcast lane 0's statistics so the whole warp uses identical values.
    mean = __shfl_sync(0xffffffffu, mean, 0);
    m2 = __shfl_sync(0xffffffffu, m2, 0);
    const float var = fmaxf(m2 / static_cast<float>(D), 0.0f);
    const float rstd = 1.0f / sqrtf(var + eps);
    for (int64_t i = lane; i < d4; i += 32) {
        const float4 v = reinterpret_cast<const float4*>(xr)[i];
        const float4 g = reinterpret_cast<const float4*>(w)[i];
        const float4 c = reinterpret_cast<const float4*>(b)[i];
        float4 o;
        o.x = (v.x - mean) * rstd * g.x + c.x;
        o.y = (v.y - mean) * rstd * g.y + c.y;
        o.z = (v.z - mean) * rstd * g.z + c.z;
        o.w = (v.w - mean) * rstd * g.w + c.w;
        reinterpret_cast<float4*>(yr)[i] = o;
    }
    for (int64_t i = d4 * 4 + lane; i < D; i += 32) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
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
    auto aligned = [](const torch::Tensor& t) {
        return reinterpret_cast<uintptr_t>(t.data_ptr<float>()) % 16 == 0;
    };
    const bool vec = D % 4 == 0 && aligned(xc) && aligned(wc) && aligned(bc) && aligned(y);
    const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    TORCH_CHECK(blocks < (int64_t(1) << 31), "too many rows");
    layernorm_warp_kernel<<<static_cast<unsigned>(blocks), 32 * kRowsPerBlock, 0,
                            at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(),
        rows, D, static_cast<float>(eps), vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ln_cpp_source = (
    "torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, "
    "double eps);"
)

_ln_ext = None  # compiled lazily on the first forward


def _get_ext():
    global _ln_ext
    if _ln_ext is None:
        _ln_ext = load_inline(
            name="corpus_ln_large_forward_build",
            cpp_sources=ln_cpp_source,
            cuda_sources=ln_cuda_source,
            functions=["layernorm_forward"],
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )
    return _ln_ext


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(hidden)  # keeps ln.weight / ln.bias like Model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ext = _get_ext()
        return ext.layernorm_forward(x, self.ln.weight, self.ln.bias, self.ln.eps)
