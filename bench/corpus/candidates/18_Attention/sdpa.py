# Replaces the explicit QK^T -> softmax -> V chain with PyTorch's fused
# scaled_dot_product_attention, which dispatches to a flash / memory-efficient kernel and never
# materialises the (B, H, S, S) score matrix.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)
