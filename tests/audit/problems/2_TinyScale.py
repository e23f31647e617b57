import torch
import torch.nn as nn


class Model(nn.Module):
    """Outputs near 1e-6: all zeros pass KernelBench's atol of 1e-2 (near_zero_output)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return x * 1e-6


def get_inputs():
    return [torch.rand(64, 1024)]


def get_init_inputs():
    return []
