# LLM habit: load_inline inside ModelNew.__init__ (result kept on self). Kernel: one block per
# row; rows are 393216 floats, so the block loops over the row in chunks (no row in registers):
# one read pass keeps an online (max, sum of exp) pair per thread, merged by warp shuffles and then
# across warps, and one write pass computes exp(x - max) / sum. float4 when aligned.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

softmax_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cmath>

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ void online_add(float& m, float& s, float v) {
    if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
    } else if (m != -INFINITY) {
        s += expf(v - m);  // NaN v makes s NaN
    } else if (v != v) {
        m = v;  // NaN before any number: keep it, so the whole row comes out NaN as in torch
        s = v;
    }
}

__device__ __forceinline__ void online_merge(float& m, float& s, float m2, float s2) {
    if (m2 == -INFINITY) return;
    if (m == -INFINITY) {
        m = m2;
        s = s2;
        return;
    }
    const float mn = fmaxf(m, m2);
    s = s * expf(m - mn) + s2 * expf(m2 - mn);
    m = mn;
}

__global__ void __launch_bounds__(kThreads) online_softmax_kernel(const float* __restrict__ x,
                                                                  float* __restrict__ out,
                                                                  int64_t cols, bool vec) {
    __shared__ float sm[kWarps], ss[kWarps];
    const float* __restrict__ row = x + static_cast<int64_t>(blockIdx.x) * cols;
    float* __restrict__ orow = out + static_cast<int64_t>(blockIdx.x) * cols;

    // Pass 1: running max and running sum of exp(x - max), chunk by chunk over the row.
    float m = -INFINITY, s = 0.0f;
    const int64_t c4 = vec ? cols / 4 : 0;
    for (int64_t i = threadIdx.x; i < c4; i += kThreads) {
        const float4 v = reinterpret_cast<const float4*>(row)[i];
        online_add(m, s, v.x);
        online_add(m, s, v.y);
        online_add(m, s, v.z);
        online_add(m, s, v.w);
    }
    for (int64_t i = c4 * 4 + threadIdx.x; i < cols; i += kThreads) online_add(m, s, row[i]);

#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, off);
        online_merge(m, s, m2, s2);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        sm[warp] = m;
        ss[warp] = s;
    }
    __syncthreads();
    // All threads merge the per-warp pairs in the same order, so they agree on (M, S).
    float M = sm[0], S = ss[0];
    for (int w = 1; w < kWarps; ++w) online_merge(M, S, sm[w], ss[w]);
    const float inv = 1.0f / S;

    // Pass 2: normalise and write.
    for (int64_t i = threadIdx.x; i < c4; i += kThreads) {
        float4 v = reinterpret_cast<const float4*>(row)[i];
        v.x = expf(v.x - M) * inv;
        v.y = expf(v.y - M) * inv;
        v.z = expf(v.z - M) * inv;
        v.w = expf(v.w - M) * inv;
        reinterpret_cast<float4*>(orow)[i] = v;
    }
    for (int64_t i = c4 * 4 + threadIdx.x; i < cols; i += kThreads)
        orow[i] = expf(row[i] - M) * inv;
}

torch::Tensor softmax_dim1(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    TORCH_CHECK(x.dim() == 2, "expected a 2-D tensor");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (rows == 0 || cols == 0) return out;
    TORCH_CHECK(rows < (int64_t(1) << 31), "too many rows");
    const bool vec = cols % 4 == 0 &&
                     reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(out.data_ptr<float>()) % 16 == 0;
    online_softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0,
                            at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(),
                                                                out.data_ptr<float>(), cols, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

softmax_cpp = "torch::Tensor softmax_dim1(torch::Tensor x);"


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.softmax_ext = load_inline(
            name="corpus_softmax6g_init_online",
            cpp_sources=softmax_cpp,
            cuda_sources=softmax_source,
            functions=["softmax_dim1"],
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softmax_ext.softmax_dim1(x)
