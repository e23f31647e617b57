# An honest candidate in plain PyTorch (nothing to build): the same Linear as the problem's Model.
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2048, 2048, bias=False)

    def forward(self, x):
        return self.linear(x)
