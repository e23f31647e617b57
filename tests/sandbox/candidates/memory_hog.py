# Hostile: at import it allocates memory 64 MiB at a time and holds it, without end. Contained: the
# sandbox's memory limit stops it (the verdict names the limit); the machine never runs short.
import torch
import torch.nn as nn

held = []
while True:
    held.append(bytearray(64 << 20))


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
