import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU on KernelBench's [0, 1) inputs: the identity passes (identity_under_inputs)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(64, 1024)]


def get_init_inputs():
    return []
