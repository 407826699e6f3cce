"""backends/manual_attention.py: attention written out by hand (softmax(q @ k^T * scale) @ v) runs
as one scaled_dot_product_attention dispatch, with the scale as a multiplication, a division or
none, with heads (rank 4, the bmm's views) or without (rank 3), with a dynamic sequence length; a
model that also returns the probabilities keeps its ops. Results match eager."""
import math

import pytest
import torch

from helpers import dispatch_ops, lower, run_pte
from vkdelegate.examples.models import MODELS


class Attention(torch.nn.Module):
    def __init__(self, scaling: str):
        super().__init__()
        self.scaling = scaling

    def forward(self, q, k, v):
        scores = q @ k.transpose(-2, -1)
        if self.scaling == "mul":
            scores = scores * (1.0 / math.sqrt(q.shape[-1]))
        elif self.scaling == "div":
            scores = scores / math.sqrt(q.shape[-1])
        return torch.softmax(scores, dim=-1) @ v


class AttentionAndProbs(torch.nn.Module):
    def forward(self, q, k, v):
        probs = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return probs @ v, probs


def check(model, inputs, fused=True, dynamic_shapes=None, run_inputs=None, op="aten.scaled_dot_product_attention.default"):
    em = lower(model.eval(), inputs, dynamic_shapes=dynamic_shapes)
    ops = dispatch_ops(em)
    if fused:
        assert ops.count(op) == 1, ops
        assert not any(op in ("aten.bmm.default", "aten._softmax.default") for op in ops), ops
    else:
        assert "aten.scaled_dot_product_attention.default" not in ops, ops
    run_inputs = run_inputs or inputs
    for ours, ref in zip(run_pte(em.to_executorch().buffer, run_inputs), torch.utils._pytree.tree_leaves(model(*run_inputs))):
        torch.testing.assert_close(ours, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("scaling", ["mul", "div", "none"])
def test_heads_and_scalings_fuse(scaling):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 13, 16), torch.randn(2, 3, 19, 16), torch.randn(2, 3, 19, 24)
    check(Attention(scaling), (q, k, v))


def test_rank3_and_dynamic_length():
    torch.manual_seed(0)
    inputs = (torch.randn(4, 9, 32), torch.randn(4, 9, 32), torch.randn(4, 9, 32))
    seq = torch.export.Dim("seq", min=2, max=30)
    small = tuple(torch.randn(4, 5, 32) for _ in range(3))
    check(Attention("mul"), inputs, dynamic_shapes=tuple({1: seq} for _ in range(3)), run_inputs=small)


def test_probabilities_returned_keep_the_ops():
    torch.manual_seed(0)
    check(AttentionAndProbs(), tuple(torch.randn(2, 2, 7, 8) for _ in range(3)), fused=False)


def test_transformer_block_attention_is_one_dispatch():
    """Its q, k and v are selects of a packed projection: the sdpa made here then fuses with them
    (backends/packed_attention.py)."""
    model, inputs = MODELS["transformer_block"]()
    check(model, inputs, op="et_vk.vkd_sdpa_qkv.default")
