"""backends/noop_copies.py: copies that copy nothing (an expand to the input's own shape, an
identity permute, a whole-dim slice) leave the graph, so they cost no dispatch; real ones stay;
results match eager, with static and dynamic shapes."""
import torch

from helpers import dispatch_ops, lower, run_pte


class Attention(torch.nn.Module):
    """Two rank-4 products as in attention (without the softmax, which manual_attention.py would
    fuse into one sdpa): matmul's decomposition expands each operand to the shape it has."""

    def forward(self, q, k, v):
        return torch.tanh((q @ k.transpose(-2, -1)) * 0.125) @ v


class Broadcast(torch.nn.Module):
    """A real expand (a broadcast), an identity permute and a whole-dim slice."""

    def forward(self, x, y):
        return x.expand(3, 5, 7) + y.permute(0, 1, 2)[:, :, 0:7]


def test_matmul_expands_leave_the_graph_and_results_match():
    torch.manual_seed(0)
    inputs = tuple(torch.randn(2, 4, 17, 32) for _ in range(3))
    em = lower(Attention().eval(), inputs)
    ops = dispatch_ops(em)
    assert not any("expand_copy" in op for op in ops), ops
    assert sum("bmm" in op for op in ops) == 2, ops
    out = run_pte(em.to_executorch().buffer, inputs)[0]
    torch.testing.assert_close(out, Attention()(*inputs), rtol=1e-4, atol=1e-5)


def test_dynamic_dims_count_as_equal_only_to_themselves():
    torch.manual_seed(0)
    inputs = tuple(torch.randn(2, 4, 17, 32) for _ in range(3))
    seq = torch.export.Dim("seq", min=2, max=40)
    em = lower(Attention().eval(), inputs, dynamic_shapes=tuple({2: seq} for _ in range(3)))
    assert not any("expand_copy" in op for op in dispatch_ops(em))
    small = tuple(torch.randn(2, 4, 9, 32) for _ in range(3))
    out = run_pte(em.to_executorch().buffer, small)[0]
    torch.testing.assert_close(out, Attention()(*small), rtol=1e-4, atol=1e-5)


def test_real_copies_stay():
    torch.manual_seed(0)
    x, y = torch.randn(1, 5, 7), torch.randn(3, 5, 7)
    em = lower(Broadcast().eval(), (x, y))
    ops = dispatch_ops(em)
    assert any("expand_copy" in op for op in ops), ops  # the broadcast is a copy
    assert not any("permute_copy" in op or "slice_copy" in op for op in ops), ops
    out = run_pte(em.to_executorch().buffer, (x, y))[0]
    torch.testing.assert_close(out, Broadcast()(x, y))
