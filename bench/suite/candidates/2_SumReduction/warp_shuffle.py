import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Small problem. Sum over one dimension (keepdim). Reducing the innermost dimension: one block per
# row, float4 loads when aligned, warp-shuffle reduction then one shared-memory step across warps.
# Reducing an outer dimension: 32 output columns x 8 row-slices per block, coalesced along the
# inner dimension, combined in shared memory.
sum_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <vector>

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__global__ void __launch_bounds__(kThreads) sum_rows_kernel(const float* __restrict__ x,
                                                            float* __restrict__ out, int64_t r,
                                                            bool vec) {
    __shared__ float part[kWarps];
    const float* __restrict__ row = x + static_cast<int64_t>(blockIdx.x) * r;
    float acc0 = 0.0f, acc1 = 0.0f;
    if (vec) {
        const float4* __restrict__ row4 = reinterpret_cast<const float4*>(row);
        const int64_t r4 = r >> 2;
        for (int64_t i = threadIdx.x; i < r4; i += kThreads) {
            const float4 v = row4[i];
            acc0 += v.x + v.y;
            acc1 += v.z + v.w;
        }
    } else {
        for (int64_t i = threadIdx.x; i < r; i += kThreads) acc0 += row[i];
    }
    float acc = warp_sum(acc0 + acc1);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) part[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        float t = lane < kWarps ? part[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) out[blockIdx.x] = t;
    }
}

__global__ void __launch_bounds__(kThreads) sum_strided_kernel(const float* __restrict__ x,
                                                               float* __restrict__ out,
                                                               int64_t r, int64_t inner,
                                                               int64_t inner_blocks) {
    __shared__ float part[8][33];
    const int64_t o = blockIdx.x / inner_blocks;
    const int64_t i = (blockIdx.x % inner_blocks) * 32 + threadIdx.x;
    float acc = 0.0f;
    if (i < inner) {
        const float* __restrict__ base = x + o * r * inner + i;
        for (int64_t k = threadIdx.y; k < r; k += 8) acc += base[k * inner];
    }
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
        float t = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j) t += part[j][threadIdx.x];
        out[o * inner + i] = t;
    }
}

torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda(), "expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    auto xc = x.contiguous();
    const int64_t nd = xc.dim();
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "dim out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < nd; ++d) inner *= xc.size(d);
    const int64_t r = xc.size(dim);
    std::vector<int64_t> out_shape(xc.sizes().begin(), xc.sizes().end());
    out_shape[dim] = 1;
    auto out = torch::empty(out_shape, xc.options());
    if (outer * inner == 0) return out;
    if (r == 0) return out.zero_();
    auto stream = at::cuda::getCurrentCUDAStream();
    if (inner == 1) {
        TORCH_CHECK(outer < (int64_t(1) << 31), "too many rows");
        const bool vec = r % 4 == 0 && reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) % 16 == 0;
        sum_rows_kernel<<<static_cast<unsigned>(outer), kThreads, 0, stream>>>(
            xc.data_ptr<float>(), out.data_ptr<float>(), r, vec);
    } else {
        const int64_t inner_blocks = (inner + 31) / 32;
        TORCH_CHECK(outer * inner_blocks < (int64_t(1) << 31), "too many blocks");
        sum_strided_kernel<<<static_cast<unsigned>(outer * inner_blocks), dim3(32, 8), 0, stream>>>(
            xc.data_ptr<float>(), out.data_ptr<float>(), r, inner, inner_blocks);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

sum_cpp_source = "torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim);"

sum_module = load_inline(
    name="bench_sum_warp_shuffle",
    cpp_sources=sum_cpp_source,
    cuda_sources=sum_cuda_source,
    functions=["sum_dim_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sum_module.sum_dim_forward(x, self.dim)
