"""ViT-Tiny/16 (Dosovitskiy et al.): 224x224 images, 16x16 patches, dim 192,
12 pre-norm layers of 3 heads, MLP 768, class token, learned position embedding.
Seeded random weights."""
import torch
from torch import nn
from torch.nn import functional as F


class ViTBlock(nn.Module):
    def __init__(self, dim, heads, mlp_dim):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.fc1 = nn.Linear(dim, mlp_dim)
        self.fc2 = nn.Linear(mlp_dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViTTiny(nn.Module):
    def __init__(self, image_size=224, patch=16, dim=192, depth=12, heads=3, mlp_dim=768, classes=1000,
                 channels=3, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.patch = patch
        self.grid = image_size // patch
        # The patch embedding is a stride-16 16x16 convolution; written as a linear
        # map of each flattened (channel, row, column) patch, which is the same
        # (a Conv2d weight of shape [dim, C, 16, 16] reshapes to this one).
        self.patch_embed = nn.Linear(channels * patch * patch, dim)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, self.grid * self.grid + 1, dim) * 0.02)
        self.blocks = nn.ModuleList(ViTBlock(dim, heads, mlp_dim) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)

    def forward(self, images):
        b, c, _, _ = images.shape
        g, p = self.grid, self.patch
        patches = images.reshape(b, c, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(b, g * g, c * p * p)
        x = self.patch_embed(patches)
        x = torch.cat([self.cls_token.expand(b, -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])

    @staticmethod
    def example_inputs(batch=1, image_size=224):
        torch.manual_seed(1)
        return (torch.randn(batch, 3, image_size, image_size),)
