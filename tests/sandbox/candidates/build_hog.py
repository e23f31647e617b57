# Hostile, otherwise honest: at import it writes 12 files of 40 MiB into its build folder
# (TORCH_EXTENSIONS_DIR), meant to stay in kbv's cache and fill the disk. Contained: the build
# folder is a tmpfs of the `build` limit; the build that fills it is a compile_error naming the
# limit, and nothing of it reaches the cache.
import os

import torch
import torch.nn as nn

folder = os.environ["TORCH_EXTENSIONS_DIR"]
os.makedirs(folder, exist_ok=True)
for i in range(12):
    with open(os.path.join(folder, f"kbv-hostile-fill-{i}.bin"), "wb") as f:
        f.write(b"\1" * (40 << 20))


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
