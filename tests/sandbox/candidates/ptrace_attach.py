# Hostile: at import it tries to attach to a process with ptrace (to read or change another
# process's memory). Contained: the system-call filter kills it with SIGSYS before the call runs;
# the verdict says the sandbox refused a system call.
import ctypes
import os

import torch
import torch.nn as nn

PTRACE_ATTACH = 16
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace(PTRACE_ATTACH, os.getppid() or 1, None, None)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
