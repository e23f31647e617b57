# A reference left random (dropout in training mode): it cannot judge a candidate.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(p=0.5)

    def forward(self, x):
        return self.dropout(x)


def get_inputs():
    return [torch.rand(64, 256)]


def get_init_inputs():
    return []
