# A reference whose Model sits in a reference cycle, with 16 MiB of weights: under `verified` the
# candidate's worker builds one to copy its state, and only a garbage collection frees it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2048, 2048, bias=False)
        self.__dict__["itself"] = [self]  # past Module.__setattr__: a plain cycle

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.rand(8, 2048)]


def get_init_inputs():
    return []
