# An honest candidate in plain PyTorch for tests/audit/problems/7_LogOfInput.py (log x): right on
# every input the reference takes.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.log(x)
