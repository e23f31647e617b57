# A reference whose memory runs out on inputs with negative values (the hidden families' draws), as
# a GiB-sized problem's does on a device the candidate's worker shares: the evaluation must say so,
# not skip those families as out of the problem's domain (tests/e2e/eval_test.cpp).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if (x < 0).any():
            torch.empty(1 << 62, dtype=torch.uint8)  # more than any allocator holds: torch's own error
        return torch.relu(x)


def get_inputs():
    return [torch.rand(16, 1024)]


def get_init_inputs():
    return []
