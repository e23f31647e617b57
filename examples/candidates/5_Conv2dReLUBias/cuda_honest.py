import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

conv_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

// Fused direct convolution (stride 1, no padding) + conv bias + ReLU + per-channel bias.
// One thread per output element.
__global__ void conv_relu_bias_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ conv_bias,
                                      const float* __restrict__ bias, float* __restrict__ out,
                                      int N, int C, int H, int W, int O, int KH, int KW, int OH,
                                      int OW) {
    const int64_t total = (int64_t)N * O * OH * OW;
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    const int ow = idx % OW;
    const int oh = (idx / OW) % OH;
    const int o = (idx / ((int64_t)OW * OH)) % O;
    const int n = idx / ((int64_t)OW * OH * O);
    float acc = conv_bias[o];
    for (int c = 0; c < C; ++c) {
        const float* xp = x + (((int64_t)n * C + c) * H + oh) * W + ow;
        const float* wp = w + ((int64_t)o * C + c) * KH * KW;
        for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) acc = fmaf(xp[kh * W + kw], wp[kh * KW + kw], acc);
    }
    out[idx] = fmaxf(acc, 0.0f) + bias[o];
}

torch::Tensor conv_relu_bias_forward(torch::Tensor x, torch::Tensor w, torch::Tensor conv_bias,
                                     torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && conv_bias.is_cuda() && bias.is_cuda(),
                "expected CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32,
                "expected float32");
    TORCH_CHECK(x.dim() == 4 && w.dim() == 4 && x.size(1) == w.size(1), "shape mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto cb = conv_bias.contiguous();
    auto bc = bias.contiguous();
    const int N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int O = wc.size(0), KH = wc.size(2), KW = wc.size(3);
    TORCH_CHECK(cb.numel() == O && bc.numel() == O, "bias size mismatch");
    const int OH = H - KH + 1, OW = W - KW + 1;
    auto out = torch::empty({N, O, OH, OW}, xc.options());
    const int64_t total = (int64_t)N * O * OH * OW;
    if (total == 0) return out;
    const int threads = 256;
    const unsigned blocks = static_cast<unsigned>((total + threads - 1) / threads);
    conv_relu_bias_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), cb.data_ptr<float>(), bc.data_ptr<float>(),
        out.data_ptr<float>(), N, C, H, W, O, KH, KW, OH, OW);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

conv_cpp_source = (
    "torch::Tensor conv_relu_bias_forward(torch::Tensor x, torch::Tensor w, "
    "torch::Tensor conv_bias, torch::Tensor bias);"
)

conv_module = load_inline(
    name="conv_relu_bias_cuda",
    cpp_sources=conv_cpp_source,
    cuda_sources=conv_cuda_source,
    functions=["conv_relu_bias_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super(ModelNew, self).__init__()
        # Same parameter names and shapes as Model (conv.weight, conv.bias, bias).
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return conv_module.conv_relu_bias_forward(x, self.conv.weight, self.conv.bias, self.bias)
