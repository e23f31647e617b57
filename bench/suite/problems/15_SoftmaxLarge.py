import torch
import torch.nn as nn

# Large (memory-bound) softmax: (8192, 16384) = 128 Mi floats (512 MiB).
batch_size = 8192
dim = 16384


class Model(nn.Module):
    """Softmax over the last dimension."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
