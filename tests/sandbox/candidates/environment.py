# Hostile, otherwise honest: at import it looks for a secret of the operator's environment
# (AWS_SECRET_ACCESS_KEY, set where kbv started) in os.environ, through the C library's getenv and
# in /proc/self/environ, to print it into its log, which the record and the store keep. Contained:
# candidates' workers get only the variables builds, CUDA and torch read; the secret is nowhere.
import ctypes
import os

import torch
import torch.nn as nn

NAME = "AWS_SECRET_ACCESS_KEY"
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
with open("/proc/self/environ", "rb") as f:
    started = f.read()
found = {"os.environ": os.environ.get(NAME), "getenv": libc.getenv(NAME.encode()),
         "/proc/self/environ": NAME.encode() in started or None}
seen = [where for where, value in found.items() if value]
print(f"hostile: {NAME} seen in {', '.join(seen)}: {found}" if seen else f"hostile: {NAME} nowhere")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
