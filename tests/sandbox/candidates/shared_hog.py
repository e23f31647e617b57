# Hostile: at import it takes 10 GiB of memory that a per-process limit on private memory
# (RLIMIT_DATA) does not count -- shared anonymous mappings and memfds, touched page by page, part
# of it held by a forked child -- meant to push the machine into its OOM killer. Contained: the
# sandbox's cgroup counts all of its memory together; the kernel kills it at --limit memory, and
# the verdict names the limit.
import mmap
import os
import time

import torch
import torch.nn as nn

CHUNK = 256 << 20
held = []


def take(n):
    for _ in range(n):
        if len(held) % 2:
            fd = os.memfd_create("kbv-hostile")
            os.ftruncate(fd, CHUNK)
            region = mmap.mmap(fd, CHUNK, flags=mmap.MAP_SHARED)
        else:
            region = mmap.mmap(-1, CHUNK, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
        for offset in range(0, CHUNK, 4096):
            region[offset] = 1
        held.append(region)


if os.fork() == 0:  # a child holds 1 GiB of it, apart from the worker
    take(4)
    time.sleep(600)
    os._exit(0)
take(36)
print("hostile: holding 10 GiB")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
