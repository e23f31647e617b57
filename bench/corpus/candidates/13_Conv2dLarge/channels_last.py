# Runs the convolution in channels_last (NHWC) memory format for both input and weight, which
# lets cuDNN pick its NHWC tensor-core kernels without internal transposes; the output is made
# contiguous (NCHW) again before returning.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous(memory_format=torch.channels_last)
        w = self.conv.weight.contiguous(memory_format=torch.channels_last)
        y = F.conv2d(x, w, self.conv.bias, stride=self.conv.stride, padding=self.conv.padding)
        return y.contiguous()
