# KernelBench level 1's 23_Softmax as KernelBench sizes it: softmax over rows of 393216 float32,
# 4096 rows, 6 GiB in and 6 GiB out.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
