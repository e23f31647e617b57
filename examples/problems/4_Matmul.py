import torch
import torch.nn as nn

M = 256
K = 256
N = 256


class Model(nn.Module):
    """C = A @ B with A (M, K) and B (K, N), float32."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
