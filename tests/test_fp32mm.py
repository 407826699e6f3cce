"""fp32mm family: matmul_tiled.glsl (the float32 kernel for large products) in every
configuration the host can pick (forced with VKDELEGATE_TILED_MM), on shapes that hit
its edges: M, N, K not multiples of the tile or of BK, K below BK, unaligned K or N
(scalar loads and stores), bias with alpha/beta, B contiguous in n (mm, bmm, addmm) or
in k (linear). The op samples in op_registry.py cover the default selection."""
import pytest
import torch

from helpers import TOLERANCES, run_pte, to_pte

# (M, K, N): aligned with a partial last K step; unaligned K and N; K below BK (aligned
# and not); one tile or less.
SHAPES = [(130, 36, 132), (129, 19, 131), (67, 4, 72), (66, 3, 70), (5, 8, 7)]


class Products(torch.nn.Module):
    def __init__(self, k, n):
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(k, n)

    def forward(self, a, b, a3, b3, bias):
        return (torch.mm(a, b), self.linear(a), torch.bmm(a3, b3),
                torch.addmm(bias, a, b, beta=0.5, alpha=2.0))


@pytest.mark.parametrize("config", ["8,8,8", "16,8,8", "8,16,8", "16,16,8", "16,16,16",
                                    "8,8,8 unroll group3", "16,8,8 group2", "16,16,8 unroll group8"])
def test_tiled_configs(config, monkeypatch):
    monkeypatch.setenv("VKDELEGATE_TILED_MM", config.split()[0])
    monkeypatch.setenv("VKDELEGATE_TILED_MM_UNROLL", "1" if "unroll" in config else "0")
    monkeypatch.setenv("VKDELEGATE_TILED_MM_GROUP", config.split("group")[1] if "group" in config else "0")
    for m, k, n in SHAPES:
        torch.manual_seed(m * 1000 + n)
        inputs = (torch.randn(m, k), torch.randn(k, n), torch.randn(2, m, k), torch.randn(2, k, n),
                  torch.randn(n))
        module = Products(k, n)
        refs = module(*inputs)
        outs = run_pte(to_pte(module, inputs), inputs)
        for out, ref in zip(outs, refs):
            torch.testing.assert_close(out, ref, **TOLERANCES["matmul"], msg=f"{config} {(m, k, n)}")
