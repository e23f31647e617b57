import torch
import torch.nn as nn


class Model(nn.Module):
    """x + 1000: outputs move a thousand times less than inputs, relatively (low_sensitivity)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return x + 1000.0


def get_inputs():
    return [torch.rand(64, 1024)]


def get_init_inputs():
    return []
