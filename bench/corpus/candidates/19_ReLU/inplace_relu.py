# In-place ReLU: writes the result into the input tensor, which saves allocating a second 6 GiB
# buffer and halves the memory traffic for the output.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu_(x)
