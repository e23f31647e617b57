# LLM habit: sources written to files and built with torch.utils.cpp_extension.load. At import,
# the .cpp (declaration + PYBIND11_MODULE) and .cu files go into a fresh tempfile.mkdtemp() and
# load() compiles them (new paths each process, so ninja rebuilds every time). Kernel: one block per
# row, rows of up to 8192 kept in registers (two-pass stats); a warp-per-row Welford otherwise.
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

ln_cpp_source = r"""
#include <torch/extension.h>

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("layernorm_forward", &layernorm_forward, "LayerNorm forward (CUDA)");
}
"""

ln_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kV4 = 8;  // float4 per thread: rows up to 8192

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

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

__global__ void __launch_bounds__(kThreads) layernorm_regs_kernel(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
    float* __restrict__ y, int64_t D, float eps) {
    __shared__ float sh[kWarps];
    const int64_t d4 = D / 4;
    const float4* __restrict__ xr = reinterpret_cast<const float4*>(x + blockIdx.x * D);
    float4* __restrict__ yr = reinterpret_cast<float4*>(y + blockIdx.x * D);
    float4 v[kV4];
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kV4; ++j) {
        const int64_t i = static_cast<int64_t>(j) * kThreads + threadIdx.x;
        if (i < d4) {
            v[j] = xr[i];
            s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
        }
    }
    const float mean = block_sum(s, sh) / static_cast<float>(D);
    float q = 0.0f;
#pragma unroll
    for (int j = 0; j < kV4; ++j) {
        const int64_t i = static_cast<int64_t>(j) * kThreads + threadIdx.x;
        if (i < d4) {
            v[j].x -= mean;
            v[j].y -= mean;
            v[j].z -= mean;
            v[j].w -= mean;
            q = fmaf(v[j].x, v[j].x, q);
            q = fmaf(v[j].y, v[j].y, q);
            q = fmaf(v[j].z, v[j].z, q);
            q = fmaf(v[j].w, v[j].w, q);
        }
    }
    const float var = block_sum(q, sh) / static_cast<float>(D);
    const float rstd = 1.0f / sqrtf(var + eps);
#pragma unroll
    for (int j = 0; j < kV4; ++j) {
        const int64_t i = static_cast<int64_t>(j) * kThreads + threadIdx.x;
        if (i < d4) {
            const float4 g = reinterpret_cast<const float4*>(w)[i];
            const float4 c = reinterpret_cast<const float4*>(b)[i];
            float4 o;
            o.x = v[j].x * rstd * g.x + c.x;
            o.y = v[j].y * rstd * g.y + c.y;
            o.z = v[j].z * rstd * g.z + c.z;
            o.w = v[j].w * rstd * g.w + c.w;
            yr[i] = o;
        }
    }
}

// Fallback for other widths: one warp per row, Welford, scalar accesses.
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

__global__ void __launch_bounds__(256) layernorm_warp_kernel(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
    float* __restrict__ y, int64_t rows, int64_t D, float eps) {
    const int lane = threadIdx.x & 31;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * 8 + (threadIdx.x >> 5);
    if (row >= rows) return;  // whole warp
    const float* __restrict__ xr = x + row * D;
    float* __restrict__ yr = y + row * D;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int64_t i = lane; i < D; i += 32) {
        const float v = xr[i];
        n += 1.0f;
        const float d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const float nb = __shfl_xor_sync(0xffffffffu, n, off);
        const float meanb = __shfl_xor_sync(0xffffffffu, mean, off);
        const float m2b = __shfl_xor_sync(0xffffffffu, m2, off);
        welford_merge(n, mean, m2, nb, meanb, m2b);
    }
    mean = __shfl_sync(0xffffffffu, mean, 0);
    m2 = __shfl_sync(0xffffffffu, m2, 0);
    const float rstd = 1.0f / sqrtf(fmaxf(m2 / static_cast<float>(D), 0.0f) + eps);
    for (int64_t i = lane; i < D; i += 32) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
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
    auto stream = at::cuda::getCurrentCUDAStream();
    if (D % 4 == 0 && D <= int64_t(4) * kV4 * kThreads && aligned(xc) && aligned(wc) &&
        aligned(bc) && aligned(y)) {
        TORCH_CHECK(rows < (int64_t(1) << 31), "too many rows");
        layernorm_regs_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
            xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(),
            y.data_ptr<float>(), D, static_cast<float>(eps));
    } else {
        const int64_t blocks = (rows + 7) / 8;
        TORCH_CHECK(blocks < (int64_t(1) << 31), "too many rows");
        layernorm_warp_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
            xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(),
            y.data_ptr<float>(), rows, D, static_cast<float>(eps));
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_build_dir = tempfile.mkdtemp(prefix="layernorm_ext_")
cpp_path = os.path.join(_build_dir, "layernorm.cpp")
cu_path = os.path.join(_build_dir, "layernorm_kernel.cu")
with open(cpp_path, "w") as f:
    f.write(ln_cpp_source)
with open(cu_path, "w") as f:
    f.write(ln_cuda_source)

layernorm_ext = load(
    name="corpus_ln_large_load_files",
    sources=[cpp_path, cu_path],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super(ModelNew, self).__init__()
        # Same parameter names and shapes as Model (ln.weight, ln.bias).
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layernorm_ext.layernorm_forward(x, self.ln.weight, self.ln.bias, self.ln.eps)
