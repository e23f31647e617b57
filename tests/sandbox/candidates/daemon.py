# Hostile, otherwise honest: at import it double-forks a session leader that runs on, named
# KBV_HOSTILE_MARK, meant to outlive the evaluation. Contained: it dies with the sandbox's process
# table when the evaluation ends.
import os

import torch
import torch.nn as nn

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sh", [os.environ.get("KBV_HOSTILE_MARK", "kbv-hostile-daemon"), "-c", "while :; do sleep 1; done"])
    os._exit(0)
os.wait()


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
