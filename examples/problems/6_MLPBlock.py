import torch
import torch.nn as nn

batch_size = 32
in_features = 256
hidden_features = 512
out_features = 256


class Model(nn.Module):
    """Linear -> GELU (exact, erf form) -> Linear."""

    def __init__(self, in_features, hidden_features, out_features):
        super(Model, self).__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden_features, out_features]
