"""A pre-norm transformer encoder block, written out in plain ops."""
import math

import torch
from torch import nn


class TransformerBlock(nn.Module):
    def __init__(self, dim=128, heads=4, mlp_ratio=4, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)

    def attention(self, x):
        b, t, c = x.shape
        hd = c // self.heads
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.permute(0, 2, 1, 3).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))

    @staticmethod
    def example_inputs(batch=2, seq=17, dim=128):
        torch.manual_seed(1)
        return (torch.randn(batch, seq, dim),)
