# KernelBench level 1's 19_ReLU as KernelBench sizes it: 4096 x 393216 float32, 6 GiB in and 6 GiB
# out. Checks of outputs this large must run where the data is (the device), not on the host.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
