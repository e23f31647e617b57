import torch
import torch.nn as nn

# Tampers at import: torch.set_num_threads(1) changes what torch.rand draws for a seed on the CPU
# (4_Matmul's 256x256 inputs), so its worker's inputs no longer match the reference's. Its worker
# drew them right before the import: global_state_tamper, and a record all the same.
torch.set_num_threads(1)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)
