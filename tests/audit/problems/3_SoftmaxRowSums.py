import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax rows summed: always 1, whatever the input (constant_output)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1).sum(dim=1)


def get_inputs():
    return [torch.rand(64, 1024)]


def get_init_inputs():
    return []
