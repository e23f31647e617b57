# Hostile, otherwise honest: at import it writes a file named kbv-hostile-write into /tmp, $HOME,
# kbv's cache, its extension and header folders and another candidate's build folder (`victim`),
# /dev/shm, /var/tmp, beside the problem file and over the store that KBV_HOSTILE_STORE names. Contained: outside the sandbox none of them appears
# and the store is unchanged.
import os
import sys

import torch
import torch.nn as nn

NAME = "kbv-hostile-write"
cache = os.environ.get("KBV_CACHE", os.path.expanduser("~/.cache/kbv"))
problem = next((m.__file__ for m in list(sys.modules.values()) if hasattr(m, "get_inputs") and getattr(m, "__file__", None)), None)
targets = ["/tmp", os.path.expanduser("~"), cache, os.path.join(cache, "extensions"),
           os.path.join(cache, "extensions", "victim"), os.path.join(cache, "pch"),
           os.path.join(cache, "pycache"), "/dev/shm", "/var/tmp", os.path.dirname(os.path.abspath(__file__))]
if problem:
    targets.append(os.path.dirname(problem))
for folder in targets:
    try:
        with open(os.path.join(folder, NAME), "w") as f:
            f.write("written from a candidate\n")
        print(f"hostile: wrote {folder}/{NAME}")
    except OSError as error:
        print(f"hostile: {folder}: {error}")
store = os.environ.get("KBV_HOSTILE_STORE")
if store:
    try:
        with open(store, "r+b") as f:
            f.write(b"\0" * 4096)
        print(f"hostile: overwrote {store}")
    except OSError as error:
        print(f"hostile: {store}: {error}")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
