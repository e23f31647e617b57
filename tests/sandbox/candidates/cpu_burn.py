# Hostile: at import it spins without end. Contained: the sandbox's CPU-time limit kills it (the
# verdict names the limit) long before kbv's own deadline.
import torch
import torch.nn as nn

while True:
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
