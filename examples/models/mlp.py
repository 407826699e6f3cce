"""A plain multi-layer perceptron."""
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, in_features=64, hidden=256, out_features=10, layers=3, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        dims = [in_features] + [hidden] * (layers - 1)
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.head = nn.Linear(dims[-1], out_features)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return torch.log_softmax(self.head(x), dim=-1)

    @staticmethod
    def example_inputs(batch=8):
        torch.manual_seed(1)
        return (torch.randn(batch, 64),)
