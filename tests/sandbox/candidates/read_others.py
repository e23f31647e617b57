# Hostile, otherwise honest: at import it reads the command line, environment and memory of every
# process it can find in /proc and prints them (into its own log, which the record keeps). Contained:
# /proc shows only its own process, so kbv's command line never reaches the log.
import getpass
import os

import torch
import torch.nn as nn

for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    for part in ("cmdline", "environ", "mem"):
        try:
            with open(f"/proc/{pid}/{part}", "rb") as f:
                data = f.read(4096) if part != "mem" else b"(opened)"
            print(f"hostile: /proc/{pid}/{part}: {data!r}")
        except OSError as error:
            print(f"hostile: /proc/{pid}/{part}: {error}")
print("hostile: processes seen:", len([p for p in os.listdir("/proc") if p.isdigit()]))
# Its user has no passwd entry; what asks for its name (torch.compile's cache folder) still gets one.
print("hostile: user:", getpass.getuser())


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
