# Expresses ReLU as torch.clamp_min(x, 0.0), a single elementwise kernel with no extra
# comparison tensor.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp_min(x, 0.0)
