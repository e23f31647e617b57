# cudnn.benchmark autotuning plus NHWC (channels_last) layout for the weights and input, which is
# the layout cuDNN's fastest tensor-core convolution kernels prefer; the result is converted back
# to contiguous NCHW at the end.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super(ModelNew, self).__init__()
        torch.backends.cudnn.benchmark = True
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.conv = self.conv.to(memory_format=torch.channels_last)

    def forward(self, x):
        x = x.contiguous(memory_format=torch.channels_last)
        x = self.conv(x)
        x = torch.relu(x)
        x = x + self.bias
        return x.contiguous()
