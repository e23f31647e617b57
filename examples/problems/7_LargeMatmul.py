import torch
import torch.nn as nn

# GPU-only problem: large enough that a TF32 baseline is several times faster than an FP32 one.
N = 4096


class Model(nn.Module):
    """C = A @ B with A, B (N, N), float32."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]


def get_init_inputs():
    return []
