# Enables cudnn.benchmark so cuDNN autotunes and caches the fastest convolution algorithm for this
# fixed input shape instead of using its heuristic choice.
import torch
import torch.nn as nn

torch.backends.cudnn.benchmark = True


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)
