import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Small problem. Mean over one dimension (dropped from the output), for any dim: the tensor is
# viewed as (outer, r, inner); each block owns 32 consecutive inner positions of one outer index
# (coalesced loads) and splits r over 8 thread rows, combined in shared memory, then scaled by 1/r.
mean_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <vector>

__global__ void __launch_bounds__(256) mean_tiled_kernel(const float* __restrict__ x,
                                                         float* __restrict__ out, int64_t r,
                                                         int64_t inner, int64_t inner_blocks) {
    __shared__ float part[8][33];
    const int64_t o = blockIdx.x / inner_blocks;
    const int64_t i = (blockIdx.x % inner_blocks) * 32 + threadIdx.x;
    float acc0 = 0.0f, acc1 = 0.0f;
    if (i < inner) {
        const float* __restrict__ base = x + o * r * inner + i;
        int64_t k = threadIdx.y;
        for (; k + 8 < r; k += 16) {
            acc0 += base[k * inner];
            acc1 += base[(k + 8) * inner];
        }
        if (k < r) acc0 += base[k * inner];
    }
    part[threadIdx.y][threadIdx.x] = acc0 + acc1;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
        float t = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j) t += part[j][threadIdx.x];
        out[o * inner + i] = t / static_cast<float>(r);
    }
}

torch::Tensor mean_dim_forward(torch::Tensor x, int64_t dim) {
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
    TORCH_CHECK(r > 0, "mean over an empty dimension");
    std::vector<int64_t> out_shape;
    for (int64_t d = 0; d < nd; ++d)
        if (d != dim) out_shape.push_back(xc.size(d));
    auto out = torch::empty(out_shape, xc.options());
    if (outer * inner == 0) return out;
    const int64_t inner_blocks = (inner + 31) / 32;
    TORCH_CHECK(outer * inner_blocks < (int64_t(1) << 31), "too many blocks");
    mean_tiled_kernel<<<static_cast<unsigned>(outer * inner_blocks), dim3(32, 8), 0,
                        at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), out.data_ptr<float>(), r, inner, inner_blocks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

mean_cpp_source = "torch::Tensor mean_dim_forward(torch::Tensor x, int64_t dim);"

mean_module = load_inline(
    name="bench_mean_dim_tiled",
    cpp_sources=mean_cpp_source,
    cuda_sources=mean_cuda_source,
    functions=["mean_dim_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return mean_module.mean_dim_forward(x, self.dim)
