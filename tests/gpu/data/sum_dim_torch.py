import torch
import torch.nn as nn


# The reference's own reduction as a candidate (bench/suite/problems/16_SumDimLarge.py): torch's
# kernel timed in a candidate's worker, beside the same kernel timed as the baseline in the
# reference's (tests/gpu/run.sh, stage `roles`). Named no_custom_kernel, and timed all the same.
class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)
