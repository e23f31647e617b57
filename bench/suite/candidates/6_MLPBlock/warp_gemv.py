import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Small problem. Linear -> exact GELU -> Linear for a small batch, as two launches of a
# warp-per-output-feature kernel: each warp reads its weight row once per group of 4 batch rows
# (coalesced across lanes), accumulates 4 dot products in fp32, reduces them with warp shuffles,
# and lane 0 adds the bias (and GELU in the first layer).
mlp_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int kWarps = 8;  // output features per 256-thread block
constexpr int RB = 4;      // batch rows per pass

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

template <bool kGelu>
__global__ void __launch_bounds__(32 * kWarps) linear_warp_kernel(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
    float* __restrict__ y, int rows, int in_f, int out_f) {
    const int lane = threadIdx.x & 31;
    const int o = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (o >= out_f) return;  // the whole warp leaves; no block-level barrier in this kernel
    const float* __restrict__ wr = w + static_cast<int64_t>(o) * in_f;
    const float bo = b[o];
    for (int n0 = 0; n0 < rows; n0 += RB) {
        float acc[RB];
#pragma unroll
        for (int r = 0; r < RB; ++r) acc[r] = 0.0f;
        for (int k = lane; k < in_f; k += 32) {
            const float wv = wr[k];
#pragma unroll
            for (int r = 0; r < RB; ++r)
                if (n0 + r < rows)
                    acc[r] = fmaf(x[static_cast<int64_t>(n0 + r) * in_f + k], wv, acc[r]);
        }
#pragma unroll
        for (int r = 0; r < RB; ++r) {
            const float s = warp_sum(acc[r]);
            if (lane == 0 && n0 + r < rows) {
                float v = s + bo;
                if (kGelu) v = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
                y[static_cast<int64_t>(n0 + r) * out_f + o] = v;
            }
        }
    }
}

template <bool kGelu>
static void launch_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                          torch::Tensor& y) {
    const int rows = x.size(0), in_f = x.size(1), out_f = w.size(0);
    if (rows == 0 || out_f == 0) return;
    const int blocks = (out_f + kWarps - 1) / kWarps;
    linear_warp_kernel<kGelu><<<blocks, 32 * kWarps, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), rows,
        in_f, out_f);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

torch::Tensor mlp_forward(torch::Tensor x, torch::Tensor w1, torch::Tensor b1, torch::Tensor w2,
                          torch::Tensor b2) {
    for (const auto& t : {x, w1, b1, w2, b2}) {
        TORCH_CHECK(t.is_cuda(), "expected CUDA tensors");
        TORCH_CHECK(t.scalar_type() == torch::kFloat32, "expected float32");
    }
    TORCH_CHECK(x.dim() == 2 && w1.dim() == 2 && w2.dim() == 2 && x.size(1) == w1.size(1) &&
                    w1.size(0) == w2.size(1) && b1.numel() == w1.size(0) &&
                    b2.numel() == w2.size(0),
                "shape mismatch");
    TORCH_CHECK(x.numel() < (int64_t(1) << 31) && w1.numel() < (int64_t(1) << 31) &&
                    w2.numel() < (int64_t(1) << 31),
                "sizes too large");
    auto xc = x.contiguous();
    auto w1c = w1.contiguous(), b1c = b1.contiguous();
    auto w2c = w2.contiguous(), b2c = b2.contiguous();
    auto h = torch::empty({xc.size(0), w1c.size(0)}, xc.options());
    auto y = torch::empty({xc.size(0), w2c.size(0)}, xc.options());
    launch_linear<true>(xc, w1c, b1c, h);
    launch_linear<false>(h, w2c, b2c, y);
    return y;
}
"""

mlp_cpp_source = (
    "torch::Tensor mlp_forward(torch::Tensor x, torch::Tensor w1, torch::Tensor b1, "
    "torch::Tensor w2, torch::Tensor b2);"
)

mlp_module = load_inline(
    name="bench_mlp_warp_gemv",
    cpp_sources=mlp_cpp_source,
    cuda_sources=mlp_cuda_source,
    functions=["mlp_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, hidden_features, out_features):
        super(ModelNew, self).__init__()
        # Same parameter names and shapes as Model (fc1.*, fc2.*), same creation order.
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        return mlp_module.mlp_forward(x, self.fc1.weight, self.fc1.bias,
                                      self.fc2.weight, self.fc2.bias)
