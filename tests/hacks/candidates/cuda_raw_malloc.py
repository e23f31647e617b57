# Honest two-pass CUDA sum whose workspace comes from cudaMalloc/cudaFree on every call instead
# of torch's caching allocator: correct, but memory the allocator's statistics never see (and a
# synchronizing free each call). The static screen leaves a raw_allocation warning.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor sum_raw_workspace(torch::Tensor x, int64_t dim);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int kChunk = 256;

__global__ void chunk_sums(const float* x, float* partial, int64_t cols, int64_t chunks) {
    __shared__ float shared[kChunk];
    const int64_t row = blockIdx.y, chunk = blockIdx.x;
    const int64_t col = chunk * kChunk + threadIdx.x;
    shared[threadIdx.x] = col < cols ? x[row * cols + col] : 0.0f;
    __syncthreads();
    for (int stride = kChunk / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[row * chunks + chunk] = shared[0];
}

__global__ void row_sums(const float* partial, float* out, int64_t rows, int64_t chunks) {
    const int64_t row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    double total = 0.0;
    for (int64_t c = 0; c < chunks; ++c) total += partial[row * chunks + c];
    out[row] = static_cast<float>(total);
}

torch::Tensor sum_raw_workspace(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda(), "expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    TORCH_CHECK(x.dim() == 2 && dim == 1, "expected a 2-D input reduced over dim 1");
    auto xc = x.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    const int64_t chunks = (cols + kChunk - 1) / kChunk;
    auto out = torch::empty({rows, 1}, xc.options());
    float* partial = nullptr;
    C10_CUDA_CHECK(cudaMalloc(&partial, rows * chunks * sizeof(float)));
    auto stream = at::cuda::getCurrentCUDAStream();
    chunk_sums<<<dim3(chunks, rows), kChunk, 0, stream>>>(xc.data_ptr<float>(), partial, cols, chunks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    row_sums<<<(rows + 127) / 128, 128, 0, stream>>>(partial, out.data_ptr<float>(), rows, chunks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    C10_CUDA_CHECK(cudaStreamSynchronize(stream));
    C10_CUDA_CHECK(cudaFree(partial));
    return out;
}
"""

sum_ext = load_inline(
    name="honest_cuda_raw_malloc",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["sum_raw_workspace"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sum_ext.sum_raw_workspace(x, self.dim)
