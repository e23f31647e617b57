# Hostile: at import it writes a file into its scratch without end. Contained: the sandbox's
# file-size limit stops it (the verdict names the limit).
import torch
import torch.nn as nn

with open("/tmp/kbv-hostile-big", "wb") as f:
    while True:
        f.write(b"\0" * (1 << 20))
        f.flush()


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
