# Hostile, otherwise honest: on its second call it sends SIGKILL to its parent and to every process
# id there is (kbv, the zygote, the reference worker, other candidates). Contained: it sees no
# process but its own, and kbv's record says pass.
import os
import signal

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 2:
            for target in [os.getppid(), -1] + list(range(2, 1 << 16)):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
        return torch.relu(x)
