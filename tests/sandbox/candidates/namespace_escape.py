# Hostile: at import it asks for a new user namespace (which would hand it every capability there,
# a first step out of a sandbox). Contained: the system-call filter kills it with SIGSYS.
import ctypes

import torch
import torch.nn as nn

CLONE_NEWUSER = 0x10000000
libc = ctypes.CDLL(None, use_errno=True)
libc.unshare(CLONE_NEWUSER)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
