# Hostile: at import it forks three children that each spin for 4 s of CPU time, below the
# sandbox's per-process CPU limit of 6 s (RLIMIT_CPU), 12 s together. Contained: kbv reads the
# sandbox's CPU time from its cgroup while it waits and ends the sandbox when all of its processes
# together pass the limit (the verdict names it).
import os
import time

import torch
import torch.nn as nn

children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        end = time.process_time() + 4.0
        while time.process_time() < end:
            pass
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
