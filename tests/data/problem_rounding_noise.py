# A reference whose two calls on the same inputs differ in the last bits only, as float atomics
# make some GPU kernels' (KernelBench's ConvTranspose problems among them): each call sums its rows
# in a freshly shuffled order. Deterministic up to rounding: it can judge a candidate.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        order = torch.randperm(x.shape[1], device=x.device)
        return x[:, order].sum(dim=1)


def get_inputs():
    return [torch.rand(64, 4096)]


def get_init_inputs():
    return []
