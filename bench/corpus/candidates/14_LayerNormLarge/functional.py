# Calls F.layer_norm directly with the module's weight, bias and eps on a contiguous input,
# skipping the nn.Module call overhead and guaranteeing the kernel sees a dense row layout.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        return F.layer_norm(x, self.ln.normalized_shape, self.ln.weight, self.ln.bias, self.ln.eps)
