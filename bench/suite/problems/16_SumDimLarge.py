import torch
import torch.nn as nn

# Large (memory-bound) strided reduction: sum over the middle dimension of (64, 8192, 256),
# 128 Mi floats (512 MiB) in, (64, 256) out.
batch_size = 64
reduce_size = 8192
inner = 256
reduce_dim = 1


class Model(nn.Module):
    """Sum over one dimension (dropped from the output)."""

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


def get_inputs():
    x = torch.rand(batch_size, reduce_size, inner)
    return [x]


def get_init_inputs():
    return [reduce_dim]
