"""et_vk.vkd_sdpa_kv_cache against eager sdpa with the position mask it replaces, and its fusion
(backends/attention_fusion.py). The op runs alone in a small blob, so each case costs milliseconds.
runtime/ops/attention.cpp takes, for up to SPLIT_MAX_QUERIES queries, two dispatches split along the
keys (sdpa_kv_split.glsl + sdpa_kv_reduce.glsl; the setting SDPA_KV_ONE_PASS: one, the split's variant
whose last chunk combines the others), else the tiled kernel (sdpa_kv_tiled.glsl, head dims up
to 128) or, above, a workgroup per row (sdpa_kv_cache.glsl): the cases cover each with odd sizes,
positions at chunk and tile edges and the cache's end, grouped-query ratios 1 to 8, float32 and
float16, and replays of one recorded graph over many positions (the one-pass kernel's counters must
come back to zero after each execute, a faulty one included)."""
import numpy as np
import pytest
import torch
from torch.nn import functional as F

import vkdelegate.runtime as rt
from vkdelegate.quant.library import sdpa_kv_cache
from vkdelegate.serialization.blob import serialize_graph
from vkdelegate.serialization.graph_ir import DType, GraphIR, NullValue, OpCall, TensorValue

SPLIT_MAX_QUERIES = 16  # runtime/ops/attention.cpp: kSplitMaxQueries
# Decode chunks are powers of two from 4 to 128 keys (attention.cpp: kSplitMinChunk, kSplitLocal):
# positions around each of these edges meet a chunk's first and last key.
CHUNK_EDGES = (4, 8, 16, 32, 64, 128)

_DTYPES = {torch.float32: DType.float32, torch.float16: DType.float16, torch.int64: DType.int64,
           torch.int32: DType.int32}


def masked_sdpa(q, k_cache, v_cache, positions):
    """What the Llama computes: sdpa over the whole (transposed) cache with arange(S) <= pos[:, None]."""
    mask = torch.arange(k_cache.shape[1])[None, :] <= positions[:, None]
    out = F.scaled_dot_product_attention(q.transpose(1, 2).float(), k_cache.transpose(1, 2).float(),
                                         v_cache.transpose(1, 2).float(), attn_mask=mask, enable_gqa=True)
    return out.transpose(1, 2)


def op_graph(q, k_cache, v_cache, positions, **settings):
    g = GraphIR()
    ids = [g.add_value(TensorValue(_DTYPES[t.dtype], tuple(t.shape))) for t in (q, k_cache, v_cache, positions)]
    g.input_ids = list(ids)
    out = g.add_value(TensorValue(_DTYPES[q.dtype], tuple(q.shape[:3]) + (v_cache.shape[3],)))
    g.chain.append(OpCall("et_vk.vkd_sdpa_kv_cache.default", tuple(ids) + (g.add_value(NullValue()), out)))
    g.output_ids = [out]
    return rt.Graph(serialize_graph(g), overrides=settings or None)


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
    # The split path (one query): positions 0, 1, the last of a chunk, the first of the next, S - 1.
    pytest.param(1, 1, 32, 4, 64, 64, 200, 0, id="decode_position0_ratio8"),
    pytest.param(1, 1, 32, 4, 64, 64, 200, 1, id="decode_position1_ratio8"),
    pytest.param(1, 1, 8, 4, 64, 64, 200, 15, id="decode_chunk_end_ratio2"),
    pytest.param(1, 1, 8, 4, 64, 64, 200, 16, id="decode_next_chunk_ratio2"),
    pytest.param(1, 1, 32, 4, 64, 64, 200, 199, id="decode_cache_end_ratio8"),
    pytest.param(2, 2, 6, 6, 33, 40, 90, 57, id="split_batch2_ratio1_odd_dims"),
    pytest.param(1, 1, 40, 1, 96, 96, 1100, 1098, id="decode_ratio40_long_cache_heads_split"),
    pytest.param(1, SPLIT_MAX_QUERIES, 8, 1, 200, 80, 64, 40, id="split_at_its_query_limit_d200"),
    # Long caches: more chunks than the reduce's 64 invocations, a ragged last chunk; past 256 live
    # chunks the reduce takes its weights in several tiles.
    pytest.param(1, 1, 8, 4, 40, 40, 2100, 2099, id="decode_many_chunks_cache_end"),
    pytest.param(1, 2, 8, 4, 40, 40, 2100, 100, id="decode_many_chunks_ragged_chunk"),
    pytest.param(1, 1, 4, 1, 16, 24, 5000, 4999, id="decode_chunks_past_one_reduce_tile"),
    # The tiled path: several blocks of query rows, a ragged last one, key tiles of 32 and 16.
    pytest.param(1, SPLIT_MAX_QUERIES + 1, 8, 4, 64, 64, 64, 0, id="tiled_past_the_split_limit_ratio2"),
    pytest.param(1, 45, 32, 4, 64, 64, 128, 10, id="tiled_ratio8_ragged_blocks"),
    pytest.param(2, 37, 4, 4, 17, 23, 50, 13, id="tiled_batch2_ratio1_odd_dims"),
    pytest.param(1, 33, 6, 2, 128, 100, 80, 47, id="tiled_d128_ratio3_at_the_cache_end"),
    # Head dims above the tiled kernel's: a workgroup per row.
    pytest.param(1, 20, 4, 2, 160, 160, 30, 5, id="rows_d160"),
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
    # Decode: the chunks, then their reduce; more queries: one kernel.
    assert graph.execute_stats()["dispatches"] == (2 if length <= SPLIT_MAX_QUERIES else 1)


# Replays of one graph (the one-pass kernel's counters) over positions around every chunk edge, 0 and S - 1.
REPLAY_CASES = [
    # (batch, queries, heads, kv_heads, head_dim, value_dim, cache_len)
    pytest.param(1, 1, 32, 4, 64, 64, 1024, id="tinyllama_decode_ratio8"),
    pytest.param(1, 3, 16, 4, 64, 64, 300, id="t3_ratio4"),
    pytest.param(1, 16, 4, 4, 64, 64, 70, id="t16_mha"),
    pytest.param(2, 1, 4, 4, 40, 24, 1030, id="batch2_ratio1_d40_dv24_ragged_last_chunk"),
    pytest.param(1, 3, 8, 1, 6, 10, 130, id="ratio8_dims_not_multiples_of_4"),
    pytest.param(1, 1, 8, 2, 256, 256, 150, id="ratio4_d256"),
    pytest.param(1, 1, 16, 2, 128, 128, 140, id="ratio8_d128"),
    pytest.param(1, 2, 4, 2, 64, 64, 200, id="t2_ratio2"),
]
# The other kernels of the same path: reductions in shared memory (devices without subgroup
# arithmetic), the one-pass kernel, and the two-pass kernels' smallest and largest chunks (4 keys:
# more chunks than the reduce takes in one round of loads; 128, or what the head dims allow), on the
# decode shape and the element-wise loads.
OTHER_KERNELS = [{"NO_SUBGROUP_OPS": True}, {"SDPA_KV_ONE_PASS": True},
                 {"SDPA_KV_ONE_PASS": True, "NO_SUBGROUP_OPS": True}, {"SDPA_KV_CHUNK": 4},
                 {"SDPA_KV_CHUNK": 128}]


def settings_id(settings):
    return "-".join(k if v is True else f"{k}{v}" for k, v in settings.items()).lower()


REPLAY_RUNS = [pytest.param(*case.values, {}, id=case.id) for case in REPLAY_CASES] + [
    pytest.param(*case.values, settings, id=case.id + "-" + settings_id(settings))
    for case in REPLAY_CASES if case.id in ("tinyllama_decode_ratio8", "ratio8_dims_not_multiples_of_4")
    for settings in OTHER_KERNELS]


def replay_positions(length, cache_len):
    """Rows of `length` positions: each chunk edge (e - 1, e, e + 1), 0 and S - 1 in turn as the first
    position (the others follow it, or wrap, or run backwards)."""
    starts = sorted({0, cache_len - 1} | {p for e in CHUNK_EDGES for p in (e - 1, e, e + 1) if p < cache_len})
    rows = []
    for i, first in enumerate(starts):
        step = (1, -1, 7)[i % 3]
        rows.append([(first + step * j) % cache_len for j in range(length)])
    return rows


@pytest.mark.parametrize("dtype, index_dtype", [(torch.float32, torch.int64), (torch.float16, torch.int32)])
@pytest.mark.parametrize("batch, length, heads, kv_heads, head_dim, value_dim, cache_len, settings", REPLAY_RUNS)
def test_decode_replays_over_chunk_edges_and_after_a_fault(batch, length, heads, kv_heads, head_dim, value_dim,
                                                           cache_len, dtype, index_dtype, settings):
    torch.manual_seed(cache_len + head_dim)
    q = torch.randn(batch, length, heads, head_dim).to(dtype)
    k_cache = torch.randn(batch, cache_len, kv_heads, head_dim).to(dtype)
    v_cache = torch.randn(batch, cache_len, kv_heads, value_dim).to(dtype)
    graph = op_graph(q, k_cache, v_cache, torch.zeros(length, dtype=index_dtype), **settings)
    tolerance = 1e-5 if dtype == torch.float32 else 2e-3
    rows = replay_positions(length, cache_len)
    for i, row in enumerate(rows):
        positions = torch.tensor(row, dtype=index_dtype)
        if i == len(rows) // 2:  # a faulty position midway: an error, then the replays go on
            bad = positions.clone()
            bad[-1] = cache_len
            with pytest.raises(rt.GraphError, match=f"index {cache_len} is out of range for dimension 1"):
                graph.run([t.numpy() for t in (q, k_cache, v_cache, bad)])
        (out,) = graph.run([t.numpy() for t in (q, k_cache, v_cache, positions)])
        torch.testing.assert_close(torch.from_numpy(out).float(), masked_sdpa(q, k_cache, v_cache, positions),
                                   atol=tolerance, rtol=tolerance, msg=lambda m: f"positions {row}: {m}")
    stats = graph.execute_stats()
    assert stats["records"] == 1  # every execute replayed the recorded commands
    assert stats["dispatches"] == (1 if settings.get("SDPA_KV_ONE_PASS") else 2)


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("length", [3, 40])  # the split and the tiled path
def test_positions_are_data_and_out_of_order_positions_each_see_their_own_prefix(length, index_dtype):
    torch.manual_seed(0)
    q, k_cache, v_cache = torch.randn(1, length, 4, 16), torch.randn(1, 70, 2, 16), torch.randn(1, 70, 2, 16)
    graph = op_graph(q, k_cache, v_cache, torch.zeros(length, dtype=index_dtype))
    for positions in (torch.tensor([7, 2, 69] * 20)[:length], torch.tensor([0, 35, 1, 64] * 10)[:length],
                      torch.randperm(70)[:length]):
        positions = positions.to(index_dtype)
        (out,) = graph.run([t.numpy() for t in (q, k_cache, v_cache, positions)])
        torch.testing.assert_close(torch.from_numpy(out), masked_sdpa(q, k_cache, v_cache, positions),
                                   atol=1e-5, rtol=1e-5)
    assert graph.execute_stats()["records"] == 1  # new positions replay the recorded commands


@pytest.mark.parametrize("length", [2, 20])  # the split and the tiled path
@pytest.mark.parametrize("position", [12, 40, -1])
def test_a_position_outside_the_cache_is_an_error(position, length):
    q, k_cache, v_cache = torch.randn(1, length, 2, 8), torch.randn(1, 12, 2, 8), torch.randn(1, 12, 2, 8)
    graph = op_graph(q, k_cache, v_cache, torch.zeros(length, dtype=torch.int64))
    good = np.arange(length) % 12
    bad = good.copy()
    bad[-1] = position
    inputs = [q.numpy(), k_cache.numpy(), v_cache.numpy(), bad]
    with pytest.raises(rt.GraphError, match=f"index {position} is out of range for dimension 1 of size 12"):
        graph.run(inputs)
    with pytest.raises(IndexError, match="out of range"):
        sdpa_kv_cache.default(q, k_cache, v_cache, torch.from_numpy(bad))
    # The graph still runs.
    (out,) = graph.run(inputs[:3] + [good])
    torch.testing.assert_close(torch.from_numpy(out), masked_sdpa(q, k_cache, v_cache, torch.from_numpy(good)),
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
