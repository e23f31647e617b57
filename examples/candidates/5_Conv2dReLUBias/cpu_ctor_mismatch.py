import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

conv_cpp_source = r"""
#include <torch/extension.h>

// out = relu(conv2d(x, w, conv_bias)) + bias, stride 1, no padding, double accumulator.
torch::Tensor conv_relu_bias_forward(torch::Tensor x, torch::Tensor w, torch::Tensor conv_bias,
                                     torch::Tensor bias) {
    TORCH_CHECK(!x.is_cuda() && !w.is_cuda() && !conv_bias.is_cuda() && !bias.is_cuda(),
                "expected CPU tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32,
                "expected float32");
    TORCH_CHECK(x.dim() == 4 && w.dim() == 4 && x.size(1) == w.size(1), "shape mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto cb = conv_bias.contiguous();
    auto bc = bias.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int64_t O = wc.size(0), KH = wc.size(2), KW = wc.size(3);
    TORCH_CHECK(cb.numel() == O && bc.numel() == O, "bias size mismatch");
    const int64_t OH = H - KH + 1, OW = W - KW + 1;
    auto out = torch::empty({N, O, OH, OW}, xc.options());
    const float* px = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    const float* pcb = cb.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t o = 0; o < O; ++o)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    double acc = pcb[o];
                    for (int64_t c = 0; c < C; ++c)
                        for (int64_t kh = 0; kh < KH; ++kh)
                            for (int64_t kw = 0; kw < KW; ++kw)
                                acc += static_cast<double>(
                                           px[((n * C + c) * H + oh + kh) * W + ow + kw]) *
                                       pw[((o * C + c) * KH + kh) * KW + kw];
                    float v = static_cast<float>(acc);
                    v = v > 0.0f ? v : 0.0f;
                    po[((n * O + o) * OH + oh) * OW + ow] = v + pb[o];
                }
    return out;
}
"""

conv_module = load_inline(
    name="conv_relu_bias_ctor_mismatch_cpu",
    cpp_sources=conv_cpp_source,
    functions=["conv_relu_bias_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super(ModelNew, self).__init__()
        # Broken: three constructor arguments where Model takes four (no bias_shape), so
        # ModelNew(*get_init_inputs()) raises TypeError.
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))

    def forward(self, x):
        return conv_module.conv_relu_bias_forward(x, self.conv.weight, self.conv.bias, self.bias)
