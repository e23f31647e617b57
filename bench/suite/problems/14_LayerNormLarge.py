import torch
import torch.nn as nn

# Large (memory-bound) normalisation: (16, 1024, 8192) = 128 Mi floats (512 MiB).
batch_size = 16
seq_len = 1024
hidden = 8192


class Model(nn.Module):
    """LayerNorm over the last dimension, with elementwise affine weight and bias."""

    def __init__(self, hidden):
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    x = torch.randn(batch_size, seq_len, hidden)
    return [x]


def get_init_inputs():
    return [hidden]
