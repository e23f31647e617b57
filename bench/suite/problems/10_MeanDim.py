import torch
import torch.nn as nn

# Small strided reduction: mean over the middle dimension of (32, 256, 64), 512 Ki floats.
batch_size = 32
reduce_size = 256
inner = 64
reduce_dim = 1


class Model(nn.Module):
    """Mean over one dimension (dropped from the output)."""

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


def get_inputs():
    x = torch.rand(batch_size, reduce_size, inner)
    return [x]


def get_init_inputs():
    return [reduce_dim]
