# KernelBench level 1's 1_Square_matrix_multiplication_ as KernelBench sizes it: C = A @ B with
# A and B 4096 x 4096 float32 (0.14 TFLOP: tensor cores decide its baseline).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 2048 * 2


def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]


def get_init_inputs():
    return []
