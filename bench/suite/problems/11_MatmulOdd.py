import torch
import torch.nn as nn

# Large GEMM with sizes that are not multiples of common tile sizes (K is odd):
# 2*M*K*N ~ 0.40 TFLOP; inputs ~279 MB.
M = 5120
K = 6001
N = 6500


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
