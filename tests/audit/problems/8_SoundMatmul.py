import torch
import torch.nn as nn


class Model(nn.Module):
    """A @ B: sound (every finding clean; huge_memory only under a tiny --memory-share)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.rand(128, 128), torch.rand(128, 128)]


def get_init_inputs():
    return []
