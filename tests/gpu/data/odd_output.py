import torch
import torch.nn as nn

# An output of 3 MiB + 4 KiB: the reference's draws, kept one after another in its output region,
# each start inside the CUDA registration of the one before and end in a new one (kPinStep 2 MiB).
ROWS = 768
COLS = 1025


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * 2.0


def get_inputs():
    return [torch.rand(ROWS, COLS)]


def get_init_inputs():
    return []
