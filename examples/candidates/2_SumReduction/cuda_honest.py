import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sum_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <vector>

// One block per output element (outer, inner); threads stride over the reduced dimension and
// combine partial sums in shared memory.
__global__ void sum_dim_kernel(const float* __restrict__ x, float* __restrict__ out,
                               int64_t r, int64_t inner) {
    extern __shared__ float partial[];
    const int64_t a = blockIdx.x / inner;
    const int64_t b = blockIdx.x % inner;
    const float* base = x + a * r * inner + b;
    float acc = 0.0f;
    for (int64_t k = threadIdx.x; k < r; k += blockDim.x) acc += base[k * inner];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
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
    const int64_t n_out = outer * inner;
    if (n_out == 0) return out;
    const int threads = 256;
    sum_dim_kernel<<<static_cast<unsigned>(n_out), threads, threads * sizeof(float),
                     at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(),
                                                         out.data_ptr<float>(), r, inner);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

sum_cpp_source = "torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim);"

sum_module = load_inline(
    name="sum_reduction_cuda",
    cpp_sources=sum_cpp_source,
    cuda_sources=sum_cuda_source,
    functions=["sum_dim_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sum_module.sum_dim_forward(x, self.dim)
