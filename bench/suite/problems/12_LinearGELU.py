import torch
import torch.nn as nn

# Large fused layer: (8192 x 4096) @ (4096 x 8192)^T + bias, then exact GELU.
# 2*8192*4096*8192 ~ 0.55 TFLOP; input 128 MiB, weight 128 MiB.
batch_size = 8192
in_features = 4096
out_features = 8192


class Model(nn.Module):
    """Linear (with bias) followed by exact (erf) GELU."""

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.fc(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
