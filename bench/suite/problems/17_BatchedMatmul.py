import torch
import torch.nn as nn

# Large batched GEMM: 32 x (2048 x 1536) @ (1536 x 2048) ~ 0.41 TFLOP; inputs ~805 MB.
batch_size = 32
M = 2048
K = 1536
N = 2048


class Model(nn.Module):
    """C = bmm(A, B) with A (batch, M, K) and B (batch, K, N), float32."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


def get_inputs():
    A = torch.rand(batch_size, M, K)
    B = torch.rand(batch_size, K, N)
    return [A, B]


def get_init_inputs():
    return []
