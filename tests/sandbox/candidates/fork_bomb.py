# Hostile: at import it starts processes (each named KBV_HOSTILE_MARK) until the system refuses,
# then fails with that refusal. Contained: the sandbox's process limit stops it (the verdict names
# the limit), and none of them outlives the evaluation.
import os

import torch
import torch.nn as nn

mark = os.environ.get("KBV_HOSTILE_MARK", "kbv-hostile-bomb")
while True:
    if os.fork() == 0:
        os.execv("/bin/sh", [mark, "-c", "sleep 600"])


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
