"""et_vk.vkd_sdpa_kv_cache (glsl/sdpa_kv_cache.glsl) against eager sdpa with the position mask it
replaces, and its fusion (backends/attention_fusion.py). The op runs alone in a small blob, so each
case costs milliseconds: odd sizes, decode and prefill, positions at the cache's end, grouped-query
ratios 1, 3 and 4, head dims 64 and odd ones, float32 and float16."""
import numpy as np
import pytest
import torch
from torch.nn import functional as F

import vkdelegate.runtime as rt
from vkdelegate.quant.library import sdpa_kv_cache
from vkdelegate.serialization.blob import serialize_graph
from vkdelegate.serialization.graph_ir import DType, GraphIR, NullValue, OpCall, TensorValue

_DTYPES = {torch.float32: DType.float32, torch.float16: DType.float16, torch.int64: DType.int64,
           torch.int32: DType.int32}


def masked_sdpa(q, k_cache, v_cache, positions):
    """What the Llama computes: sdpa over the whole (transposed) cache with arange(S) <= pos[:, None]."""
    mask = torch.arange(k_cache.shape[1])[None, :] <= positions[:, None]
    out = F.scaled_dot_product_attention(q.transpose(1, 2).float(), k_cache.transpose(1, 2).float(),
                                         v_cache.transpose(1, 2).float(), attn_mask=mask, enable_gqa=True)
    return out.transpose(1, 2)


def op_graph(q, k_cache, v_cache, positions):
    g = GraphIR()
    ids = [g.add_value(TensorValue(_DTYPES[t.dtype], tuple(t.shape))) for t in (q, k_cache, v_cache, positions)]
    g.input_ids = list(ids)
    out = g.add_value(TensorValue(_DTYPES[q.dtype], tuple(q.shape[:3]) + (v_cache.shape[3],)))
    g.chain.append(OpCall("et_vk.vkd_sdpa_kv_cache.default", tuple(ids) + (g.add_value(NullValue()), out)))
    g.output_ids = [out]
    return rt.Graph(serialize_graph(g))


def run_op(q, k_cache, v_cache, positions):
    graph = op_graph(q, k_cache, v_cache, positions)
    (out,) = graph.run([t.numpy() for t in (q, k_cache, v_cache, positions)])
    return torch.from_numpy(out), graph


CASES = [
    # (batch, queries, heads, kv_heads, head_dim, value_dim, cache_len, first position)
    pytest.param(1, 1, 4, 4, 64, 64, 37, 36, id="decode_last_position_ratio1_d64"),
    pytest.param(1, 1, 6, 2, 64, 64, 300, 5, id="decode_short_context_long_cache_ratio3"),
    pytest.param(1, 7, 6, 2, 17, 17, 40, 33, id="t7_near_end_ratio3_d17"),
    pytest.param(1, 19, 8, 2, 24, 9, 19, 0, id="prefill_whole_cache_ratio4_dv9"),
    pytest.param(2, 3, 4, 1, 8, 8, 70, 66, id="batch2_ratio4_more_keys_than_a_workgroup"),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("batch, length, heads, kv_heads, head_dim, value_dim, cache_len, first", CASES)
def test_matches_eager_sdpa_with_the_position_mask(dtype, batch, length, heads, kv_heads, head_dim, value_dim,
                                                   cache_len, first):
    torch.manual_seed(length * 1000 + cache_len)
    q = torch.randn(batch, length, heads, head_dim).to(dtype)
    k_cache = torch.randn(batch, cache_len, kv_heads, head_dim).to(dtype)
    v_cache = torch.randn(batch, cache_len, kv_heads, value_dim).to(dtype)
    positions = torch.arange(first, first + length)
    expected = masked_sdpa(q, k_cache, v_cache, positions)
    actual, graph = run_op(q, k_cache, v_cache, positions)
    assert actual.dtype == dtype and tuple(actual.shape) == (batch, length, heads, value_dim)
    tolerance = 1e-5 if dtype == torch.float32 else 2e-3
    torch.testing.assert_close(actual.float(), expected, atol=tolerance, rtol=tolerance)
    # The eager reference of the op (what export runs) agrees too.
    torch.testing.assert_close(sdpa_kv_cache.default(q.float(), k_cache.float(), v_cache.float(), positions),
                               expected, atol=1e-5, rtol=1e-5)
    assert graph.execute_stats()["dispatches"] == 1


def test_positions_are_data_and_out_of_order_positions_each_see_their_own_prefix():
    torch.manual_seed(0)
    q, k_cache, v_cache = torch.randn(1, 3, 2, 16), torch.randn(1, 12, 1, 16), torch.randn(1, 12, 1, 16)
    graph = op_graph(q, k_cache, v_cache, torch.tensor([0, 0, 0]))
    for positions in (torch.tensor([7, 2, 11]), torch.tensor([0, 5, 1])):
        (out,) = graph.run([t.numpy() for t in (q, k_cache, v_cache, positions)])
        torch.testing.assert_close(torch.from_numpy(out), masked_sdpa(q, k_cache, v_cache, positions),
                                   atol=1e-5, rtol=1e-5)
    assert graph.execute_stats()["records"] == 1  # new positions replay the recorded commands


@pytest.mark.parametrize("position", [12, 40, -1])
def test_a_position_outside_the_cache_is_an_error(position):
    q, k_cache, v_cache = torch.randn(1, 2, 2, 8), torch.randn(1, 12, 2, 8), torch.randn(1, 12, 2, 8)
    graph = op_graph(q, k_cache, v_cache, torch.tensor([0, 1]))
    inputs = [q.numpy(), k_cache.numpy(), v_cache.numpy(), np.array([3, position])]
    with pytest.raises(rt.GraphError, match=f"index {position} is out of range for dimension 1 of size 12"):
        graph.run(inputs)
    with pytest.raises(IndexError, match="out of range"):
        sdpa_kv_cache.default(q, k_cache, v_cache, torch.tensor([3, position]))
    # The graph still runs.
    (out,) = graph.run(inputs[:3] + [np.array([3, 11])])
    torch.testing.assert_close(torch.from_numpy(out), masked_sdpa(q, k_cache, v_cache, torch.tensor([3, 11])),
                               atol=1e-5, rtol=1e-5)


def test_bad_shapes_are_a_clear_error():
    q, k_cache = torch.randn(1, 2, 3, 8), torch.randn(1, 12, 2, 8)  # 3 heads over 2 kv heads
    with pytest.raises(rt.GraphError, match="H a multiple of KVH"):
        op_graph(q, k_cache, k_cache, torch.tensor([0, 1])).run(
            [q.numpy(), k_cache.numpy(), k_cache.numpy(), np.array([0, 1])])


class CachedAttention(torch.nn.Module):
    """The Llama's cached attention: write k, v at the positions, attend over the transposed caches."""

    def __init__(self, cache_len=16, kv_heads=2, head_dim=8, strict=False):
        super().__init__()
        self.strict = strict
        self.register_buffer("k_cache", torch.zeros(1, cache_len, kv_heads, head_dim))
        self.register_buffer("v_cache", torch.zeros(1, cache_len, kv_heads, head_dim))

    def forward(self, q, k, v, positions):
        self.k_cache.index_copy_(1, positions, k)
        self.v_cache.index_copy_(1, positions, v)
        keys = torch.arange(self.k_cache.shape[1])[None, :]
        mask = keys < positions[:, None] if self.strict else keys <= positions[:, None]
        out = F.scaled_dot_product_attention(q.transpose(1, 2), self.k_cache.transpose(1, 2),
                                             self.v_cache.transpose(1, 2), attn_mask=mask, enable_gqa=True)
        return out.transpose(1, 2)


def fused_targets(module, monkeypatch):
    """The call targets of the delegated graph after preprocess's passes, and the lowered outputs' check."""
    from vkdelegate.backends import vulkan_preprocess

    from helpers import lower, run_pte

    seen = []

    def run_passes(program, options):
        run(program, options)
        seen.extend(str(node.target) for node in program.graph.nodes if node.op == "call_function")

    run = vulkan_preprocess.run_passes
    monkeypatch.setattr(vulkan_preprocess, "run_passes", run_passes)
    inputs = (torch.randn(1, 3, 4, 8), torch.randn(1, 3, 2, 8), torch.randn(1, 3, 2, 8), torch.tensor([4, 5, 6]))
    pte = lower(module, inputs).to_executorch().buffer
    (out,) = run_pte(pte, inputs)
    torch.testing.assert_close(out, module(*inputs), atol=1e-5, rtol=1e-5)
    return seen


def test_fusion_takes_the_position_mask_and_the_transposes(monkeypatch):
    targets = fused_targets(CachedAttention(), monkeypatch)
    assert any("vkd_sdpa_kv_cache" in t for t in targets)
    assert not any("scaled_dot_product_attention" in t or "permute" in t or ".le." in t for t in targets)


def test_fusion_leaves_another_mask_alone(monkeypatch):
    targets = fused_targets(CachedAttention(strict=True), monkeypatch)  # keys < position: not the op's causal prefix
    assert not any("vkd_sdpa_kv_cache" in t for t in targets)
    assert any("scaled_dot_product_attention" in t for t in targets)
