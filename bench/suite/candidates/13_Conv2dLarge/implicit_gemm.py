import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Large problem. Conv2d (stride 1, zero padding, bias) as an implicit GEMM in fp32 FMA (no tensor
# cores, no im2col buffer): out[o][p] = sum_k W[o][k] * X[k][p] + bias[o], with k = (c, kh, kw)
# and p = (n, oh, ow); the X tile is gathered from the input on the fly (zero outside the image).
# 128 (channels) x 128 (pixels) tiles per 256-thread block, 8x8 outputs per thread in registers,
# double-buffered shared memory with register prefetch of the next K slice. __launch_bounds__(256, 2)
# holds it to 128 registers (no spills) so that two blocks fit on an SM.
conv_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int BM = 128, BN = 128, BK = 8, NT = 256;

__global__ void __launch_bounds__(NT, 2) conv_igemm_kernel(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y, int Nb, int C, int H, int W, int O, int KH, int KW, int padh, int padw,
    int OH, int OW, bool vecW, bool vecY) {
    __shared__ __align__(16) float As[2][BK][BM];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int tid = threadIdx.x;
    const int Kg = C * KH * KW;
    const int KHW = KH * KW;
    const int OHW = OH * OW;
    const int64_t P = static_cast<int64_t>(Nb) * OHW;
    const int64_t p0 = static_cast<int64_t>(blockIdx.x) * BN;
    const int m0 = blockIdx.y * BM;

    // A (weights, O x Kg row-major): 128 rows x 8 k, 4 consecutive k per thread.
    const int a_r = tid >> 1, a_c = (tid & 1) << 2;
    // B (gathered input, Kg x P): 8 k x 128 p, 4 consecutive p per thread. The 4 columns'
    // image, top-left input coordinate and validity are fixed for the whole K loop.
    const int b_r = tid >> 5, b_c = (tid & 31) << 2;
    int64_t xbase[4];
    int ih0[4], iw0[4];
    bool pok[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int64_t p = p0 + b_c + q;
        pok[q] = p < P;
        const int64_t pp = pok[q] ? p : 0;
        const int n = static_cast<int>(pp / OHW);
        const int rem = static_cast<int>(pp % OHW);
        ih0[q] = rem / OW - padh;
        iw0[q] = rem % OW - padw;
        xbase[q] = static_cast<int64_t>(n) * C * H * W;
    }
    float ra[4], rb[4];

    auto load_a = [&](int k0) {
        const int r = m0 + a_r, c = k0 + a_c;
        if (vecW && r < O && c < Kg) {
            const float4 t =
                *reinterpret_cast<const float4*>(w + static_cast<int64_t>(r) * Kg + c);
            ra[0] = t.x;
            ra[1] = t.y;
            ra[2] = t.z;
            ra[3] = t.w;
        } else {
#pragma unroll
            for (int i = 0; i < 4; ++i)
                ra[i] = (r < O && c + i < Kg) ? w[static_cast<int64_t>(r) * Kg + c + i] : 0.0f;
        }
    };
    auto load_b = [&](int k0) {
        const int k = k0 + b_r;
        const bool kok = k < Kg;
        const int c = kok ? k / KHW : 0;
        const int rr = kok ? k % KHW : 0;
        const int kh = rr / KW, kw = rr % KW;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int ih = ih0[q] + kh, iw = iw0[q] + kw;
            rb[q] = (kok && pok[q] && ih >= 0 && ih < H && iw >= 0 && iw < W)
                        ? x[xbase[q] + (static_cast<int64_t>(c) * H + ih) * W + iw]
                        : 0.0f;
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int i = 0; i < 4; ++i) As[buf][a_c + i][a_r] = ra[i];
        *reinterpret_cast<float4*>(&Bs[buf][b_r][b_c]) = make_float4(rb[0], rb[1], rb[2], rb[3]);
    };

    const int ktiles = (Kg + BK - 1) / BK;
    load_a(0);
    load_b(0);
    store(0);
    __syncthreads();

    const int tx = tid & 15, ty = tid >> 4;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    for (int t = 0; t < ktiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < ktiles;
        if (more) {
            load_a((t + 1) * BK);
            load_b((t + 1) * BK);
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][kk][64 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][kk][64 + tx * 4]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) store(cur ^ 1);  // that buffer was last read before the previous barrier
        __syncthreads();
    }

    // Epilogue: + bias[o], scattered back to NCHW.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int64_t pc = p0 + h * 64 + tx * 4;  // first of 4 consecutive pixels
        if (pc >= P) continue;
        if (vecY) {
            // OHW % 4 == 0 and pc % 4 == 0: the 4 pixels are contiguous, in one image.
            const int n = static_cast<int>(pc / OHW);
            const int rem = static_cast<int>(pc % OHW);
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const int o = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
                if (o >= O) continue;
                const float bo = bias[o];
                float4 v = make_float4(acc[i][h * 4 + 0] + bo, acc[i][h * 4 + 1] + bo,
                                       acc[i][h * 4 + 2] + bo, acc[i][h * 4 + 3] + bo);
                *reinterpret_cast<float4*>(y + (static_cast<int64_t>(n) * O + o) * OHW + rem) = v;
            }
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int64_t p = pc + q;
                if (p >= P) continue;
                const int n = static_cast<int>(p / OHW);
                const int rem = static_cast<int>(p % OHW);
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    const int o = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
                    if (o >= O) continue;
                    y[(static_cast<int64_t>(n) * O + o) * OHW + rem] = acc[i][h * 4 + q] + bias[o];
                }
            }
        }
    }
}

torch::Tensor conv2d_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias, int64_t padh,
                             int64_t padw) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && bias.is_cuda(), "expected CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                    bias.scalar_type() == torch::kFloat32,
                "expected float32");
    TORCH_CHECK(x.dim() == 4 && w.dim() == 4 && x.size(1) == w.size(1), "shape mismatch");
    TORCH_CHECK(padh >= 0 && padw >= 0, "negative padding");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = bias.contiguous();
    const int64_t Nb = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int64_t O = wc.size(0), KH = wc.size(2), KW = wc.size(3);
    TORCH_CHECK(bc.numel() == O, "bias size mismatch");
    const int64_t OH = H + 2 * padh - KH + 1, OW = W + 2 * padw - KW + 1;
    TORCH_CHECK(OH > 0 && OW > 0, "kernel larger than the padded input");
    TORCH_CHECK(C * KH * KW < (int64_t(1) << 31) && OH * OW < (int64_t(1) << 31) &&
                    Nb * C * H * W < (int64_t(1) << 62),
                "sizes too large");
    auto y = torch::empty({Nb, O, OH, OW}, xc.options());
    if (y.numel() == 0) return y;
    const int64_t P = Nb * OH * OW;
    const dim3 grid(static_cast<unsigned>((P + BN - 1) / BN), static_cast<unsigned>((O + BM - 1) / BM));
    TORCH_CHECK((P + BN - 1) / BN < (int64_t(1) << 31) && grid.y <= 65535, "too many blocks");
    const bool vecW = (C * KH * KW) % 4 == 0 &&
                      reinterpret_cast<uintptr_t>(wc.data_ptr<float>()) % 16 == 0;
    const bool vecY = (OH * OW) % 4 == 0 &&
                      reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0;
    conv_igemm_kernel<<<grid, NT, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(),
        static_cast<int>(Nb), static_cast<int>(C), static_cast<int>(H), static_cast<int>(W),
        static_cast<int>(O), static_cast<int>(KH), static_cast<int>(KW), static_cast<int>(padh),
        static_cast<int>(padw), static_cast<int>(OH), static_cast<int>(OW), vecW, vecY);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

conv_cpp_source = (
    "torch::Tensor conv2d_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias, "
    "int64_t padh, int64_t padw);"
)

conv_module = load_inline(
    name="bench_conv2d_large_implicit_gemm",
    cpp_sources=conv_cpp_source,
    cuda_sources=conv_cuda_source,
    functions=["conv2d_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding):
        super(ModelNew, self).__init__()
        # Same parameter names and shapes as Model (conv.weight, conv.bias).
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)
        if self.conv.stride != (1, 1) or self.conv.dilation != (1, 1) or self.conv.groups != 1:
            raise ValueError("this kernel handles stride 1, dilation 1, groups 1 only")
        if not isinstance(self.conv.padding, tuple):
            raise ValueError("this kernel handles explicit zero padding only")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ph, pw = self.conv.padding
        return conv_module.conv2d_forward(x, self.conv.weight, self.conv.bias, ph, pw)
