# Fuses the bias add into the GEMM with torch.addmm (one cuBLAS call with beta=1 instead of a
# matmul followed by a separate bias kernel), then applies exact GELU.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(self.fc.bias, x, self.fc.weight.t())
        return F.gelu(y)
