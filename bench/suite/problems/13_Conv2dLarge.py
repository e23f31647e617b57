import torch
import torch.nn as nn

# Large convolution: 3x3, 128 -> 128 channels, padding 1, on (64, 128, 112, 112).
# 2*64*128*128*9*112*112 ~ 0.24 TFLOP; input ~411 MB.
batch_size = 64
in_channels = 128
out_channels = 128
height = 112
width = 112
kernel_size = 3
padding = 1


class Model(nn.Module):
    """Conv2d (stride 1, the given zero padding, with bias)."""

    def __init__(self, in_channels, out_channels, kernel_size, padding):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, padding]
