import torch
import torch.nn as nn

batch_size = 16
dim = 4096
reduce_dim = 1


class Model(nn.Module):
    """Sum over one dimension, keeping it (size 1) in the output."""

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return [reduce_dim]
