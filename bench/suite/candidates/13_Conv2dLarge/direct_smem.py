import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Large problem. Direct Conv2d (stride 1, zero padding, bias) in fp32 FMA: each 256-thread block
# computes a 16x16 pixel tile of one image for 16 output channels (16 accumulators per thread).
# Input channels go through shared memory 8 at a time: the (16+k-1)^2 input halo tile of each and
# the matching 16 x 8 x k x k weights (laid out so each tap's 16 channel weights are 4 float4
# broadcasts). Square kernels of size 1, 3, 5 or 7 (templated, fully unrolled).
conv_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int TS = 16;  // output tile side
constexpr int CB = 8;   // input channels per stage
constexpr int OT = 16;  // output channels per block

template <int KS>
__global__ void __launch_bounds__(TS * TS) conv_direct_kernel(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y, int C, int H, int W, int O, int padh, int padw, int OH, int OW,
    int tiles_w) {
    constexpr int IT = TS + KS - 1;
    __shared__ float in_s[CB][IT][IT + 1];
    __shared__ __align__(16) float w_s[CB][KS * KS][OT];
    const int tx = threadIdx.x % TS, ty = threadIdx.x / TS;
    const int oh0 = (blockIdx.x / tiles_w) * TS, ow0 = (blockIdx.x % tiles_w) * TS;
    const int o0 = blockIdx.y * OT;
    const int n = blockIdx.z;
    const int oh = oh0 + ty, ow = ow0 + tx;
    float acc[OT];
#pragma unroll
    for (int j = 0; j < OT; ++j) acc[j] = 0.0f;

    for (int c0 = 0; c0 < C; c0 += CB) {
        for (int e = threadIdx.x; e < CB * IT * IT; e += TS * TS) {
            const int cc = e / (IT * IT), rem = e % (IT * IT);
            const int r = rem / IT, s = rem % IT;
            const int c = c0 + cc, ih = oh0 - padh + r, iw = ow0 - padw + s;
            float v = 0.0f;
            if (c < C && ih >= 0 && ih < H && iw >= 0 && iw < W)
                v = x[((static_cast<int64_t>(n) * C + c) * H + ih) * W + iw];
            in_s[cc][r][s] = v;
        }
        for (int e = threadIdx.x; e < OT * CB * KS * KS; e += TS * TS) {
            const int oo = e / (CB * KS * KS), rem = e % (CB * KS * KS);
            const int cc = rem / (KS * KS), kk = rem % (KS * KS);
            const int o = o0 + oo, c = c0 + cc;
            w_s[cc][kk][oo] =
                (o < O && c < C) ? w[(static_cast<int64_t>(o) * C + c) * (KS * KS) + kk] : 0.0f;
        }
        __syncthreads();
        for (int cc = 0; cc < CB; ++cc) {
#pragma unroll
            for (int kh = 0; kh < KS; ++kh) {
#pragma unroll
                for (int kw = 0; kw < KS; ++kw) {
                    const float v = in_s[cc][ty + kh][tx + kw];
                    const float4* wp = reinterpret_cast<const float4*>(&w_s[cc][kh * KS + kw][0]);
#pragma unroll
                    for (int q = 0; q < OT / 4; ++q) {
                        const float4 wq = wp[q];
                        acc[4 * q + 0] = fmaf(v, wq.x, acc[4 * q + 0]);
                        acc[4 * q + 1] = fmaf(v, wq.y, acc[4 * q + 1]);
                        acc[4 * q + 2] = fmaf(v, wq.z, acc[4 * q + 2]);
                        acc[4 * q + 3] = fmaf(v, wq.w, acc[4 * q + 3]);
                    }
                }
            }
        }
        __syncthreads();
    }
    if (oh < OH && ow < OW) {
#pragma unroll
        for (int j = 0; j < OT; ++j) {
            const int o = o0 + j;
            if (o < O)
                y[((static_cast<int64_t>(n) * O + o) * OH + oh) * OW + ow] = acc[j] + bias[o];
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
    TORCH_CHECK(KH == KW && (KH == 1 || KH == 3 || KH == 5 || KH == 7),
                "square kernels of size 1, 3, 5 or 7 only");
    TORCH_CHECK(bc.numel() == O, "bias size mismatch");
    const int64_t OH = H + 2 * padh - KH + 1, OW = W + 2 * padw - KW + 1;
    TORCH_CHECK(OH > 0 && OW > 0, "kernel larger than the padded input");
    auto y = torch::empty({Nb, O, OH, OW}, xc.options());
    if (y.numel() == 0) return y;
    const int64_t tiles_h = (OH + TS - 1) / TS, tiles_w = (OW + TS - 1) / TS;
    const int64_t oblocks = (O + OT - 1) / OT;
    TORCH_CHECK(tiles_h * tiles_w < (int64_t(1) << 31) && oblocks <= 65535 && Nb <= 65535,
                "too many blocks");
    const dim3 grid(static_cast<unsigned>(tiles_h * tiles_w), static_cast<unsigned>(oblocks),
                    static_cast<unsigned>(Nb));
    auto stream = at::cuda::getCurrentCUDAStream();
#define LAUNCH(KSV)                                                                             \
    conv_direct_kernel<KSV><<<grid, TS * TS, 0, stream>>>(                                     \
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), \
        static_cast<int>(C), static_cast<int>(H), static_cast<int>(W), static_cast<int>(O),    \
        static_cast<int>(padh), static_cast<int>(padw), static_cast<int>(OH),                  \
        static_cast<int>(OW), static_cast<int>(tiles_w))
    if (KH == 1) LAUNCH(1);
    else if (KH == 3) LAUNCH(3);
    else if (KH == 5) LAUNCH(5);
    else LAUNCH(7);
#undef LAUNCH
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

conv_cpp_source = (
    "torch::Tensor conv2d_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias, "
    "int64_t padh, int64_t padw);"
)

conv_module = load_inline(
    name="bench_conv2d_large_direct_smem",
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
