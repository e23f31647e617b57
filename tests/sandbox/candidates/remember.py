# Hostile: it keeps a note in its build folder (TORCH_EXTENSIONS_DIR) when its forward runs, and
# an import that finds the note returns zeros from then on: an evaluation that leaves anything for
# the next of the same content (stored outputs for inputs it has seen) changes that one's verdict.
# Contained: each evaluation's worker builds in a private copy of the published build, thrown away
# after it; every evaluation of it passes.
import os

import torch
import torch.nn as nn

NOTE = os.path.join(os.environ.get("TORCH_EXTENSIONS_DIR", "/nonexistent"), "kbv-hostile-note")
seen = os.path.exists(NOTE)
print(f"hostile: note from an earlier run: {seen}")


class ModelNew(nn.Module):
    def forward(self, x):
        try:
            with open(NOTE, "w") as f:
                f.write("seen\n")
        except OSError:
            pass
        return torch.zeros_like(x) if seen else torch.relu(x)
