# LLM habit: the load_inline call lives in a module-level helper, def _build(), which
# ModelNew.__init__ calls (self.ext = _build()), so the build happens at construction. Kernel: sum
# over dim as (outer, r, inner); split-K partial sums (32 inner x 8 thread rows per block) into a
# workspace, then a fixed-order final pass over the partials (deterministic, no atomics).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sum_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <vector>

__global__ void __launch_bounds__(256) sum_partial_kernel(const float* __restrict__ x,
                                                          float* __restrict__ partial, int64_t r,
                                                          int64_t inner, int64_t n_out,
                                                          int64_t inner_blocks, int64_t chunk) {
    __shared__ float part[8][33];
    const int64_t o = blockIdx.x / inner_blocks;
    const int64_t i = (blockIdx.x % inner_blocks) * 32 + threadIdx.x;
    const int64_t k0 = static_cast<int64_t>(blockIdx.y) * chunk;
    const int64_t k1 = k0 + chunk < r ? k0 + chunk : r;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    if (i < inner) {
        const float* __restrict__ base = x + o * r * inner + i;
        int64_t k = k0 + threadIdx.y;
        for (; k + 24 < k1; k += 32) {
            a0 += base[k * inner];
            a1 += base[(k + 8) * inner];
            a2 += base[(k + 16) * inner];
            a3 += base[(k + 24) * inner];
        }
        for (; k < k1; k += 8) a0 += base[k * inner];
    }
    part[threadIdx.y][threadIdx.x] = (a0 + a1) + (a2 + a3);
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
        float t = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j) t += part[j][threadIdx.x];
        partial[static_cast<int64_t>(blockIdx.y) * n_out + o * inner + i] = t;
    }
}

__global__ void sum_final_kernel(const float* __restrict__ partial, float* __restrict__ out,
                                 int64_t n_out, int splits) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
    for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < n_out;
         idx += stride) {
        float t = 0.0f;
        for (int s = 0; s < splits; ++s) t += partial[s * n_out + idx];
        out[idx] = t;
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
    std::vector<int64_t> out_shape;
    for (int64_t d = 0; d < nd; ++d)
        if (d != dim) out_shape.push_back(xc.size(d));
    auto out = torch::empty(out_shape, xc.options());
    const int64_t n_out = outer * inner;
    if (n_out == 0) return out;
    if (r == 0) return out.zero_();
    const int64_t inner_blocks = (inner + 31) / 32;
    const int64_t base_blocks = outer * inner_blocks;
    TORCH_CHECK(base_blocks < (int64_t(1) << 31), "too many blocks");
    // Aim at ~8192 blocks in pass 1, with chunks of at least 64 rows.
    int64_t splits = (8192 + base_blocks - 1) / base_blocks;
    int64_t chunk = (r + splits - 1) / splits;
    if (chunk < 64) chunk = 64;
    splits = (r + chunk - 1) / chunk;
    if (splits > 65535) {
        splits = 65535;
        chunk = (r + splits - 1) / splits;
        splits = (r + chunk - 1) / chunk;
    }
    auto partial = torch::empty({splits, n_out}, xc.options());
    auto stream = at::cuda::getCurrentCUDAStream();
    dim3 grid1(static_cast<unsigned>(base_blocks), static_cast<unsigned>(splits));
    sum_partial_kernel<<<grid1, dim3(32, 8), 0, stream>>>(xc.data_ptr<float>(),
                                                          partial.data_ptr<float>(), r, inner,
                                                          n_out, inner_blocks, chunk);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n_out + threads - 1) / threads, 4096));
    sum_final_kernel<<<blocks, threads, 0, stream>>>(partial.data_ptr<float>(),
                                                     out.data_ptr<float>(), n_out,
                                                     static_cast<int>(splits));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

sum_cpp_source = "torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim);"



def _build():
    return load_inline(
        name="corpus_sum_dim_helper_build",
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
        self.ext = _build()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ext.sum_dim_forward(x, self.dim)
