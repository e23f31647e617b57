# Writes the reduction as a torch.einsum contraction that drops the reduced index, letting the
# einsum path pick an efficient reduction for the strided middle dimension.
import torch
import torch.nn as nn

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.dim % x.dim()
        ins = _LETTERS[: x.dim()]
        outs = ins[:d] + ins[d + 1 :]
        return torch.einsum(f"{ins}->{outs}", x)
