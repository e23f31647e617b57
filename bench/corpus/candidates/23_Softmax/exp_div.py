# Hand-written numerically stable softmax (subtract the row max, exp, divide by the row sum) that
# works in a single output buffer with in-place exp_ and div_, so only one full-size tensor is
# allocated besides the input, which is left unchanged.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = x.amax(dim=1, keepdim=True)
        out = torch.sub(x, m)
        out.exp_()
        s = out.sum(dim=1, keepdim=True)
        out.div_(s)
        return out
