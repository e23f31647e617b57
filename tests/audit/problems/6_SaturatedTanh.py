import torch
import torch.nn as nn


class Model(nn.Module):
    """tanh of large inputs: saturated at 1, outputs barely move (low_sensitivity)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.tanh(x * 50.0 + 50.0)


def get_inputs():
    return [torch.rand(64, 1024)]


def get_init_inputs():
    return []
