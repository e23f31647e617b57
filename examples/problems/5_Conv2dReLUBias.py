import torch
import torch.nn as nn

batch_size = 4
in_channels = 3
out_channels = 16
height = 32
width = 32
kernel_size = 3
bias_shape = (out_channels, 1, 1)


class Model(nn.Module):
    """Conv2d (stride 1, no padding), then ReLU, then a learned per-channel bias."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        x = x + self.bias
        return x


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
