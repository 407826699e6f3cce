"""et_vk.vkd_rope_kv_update (glsl/rope_kv_update.glsl): rotary embedding of q and k and the two
KV-cache writes in one dispatch, against its eager reference (quant/library.py), and its fusion
(backends/rope_fusion.py) in a Llama with a cache. The op runs alone in a small blob whose caches
are state tensors, so each case costs milliseconds."""
import numpy as np
import pytest
import torch

import vkdelegate.runtime as rt
from vkdelegate.quant.library import rope_kv_update
from vkdelegate.serialization.blob import serialize_graph
from vkdelegate.serialization.graph_ir import DType, GraphIR, IntValue, NullValue, OpCall, TensorValue

_DTYPES = {torch.float32: DType.float32, torch.float16: DType.float16, torch.int64: DType.int64,
           torch.int32: DType.int32}


def op_graph(q, k, cos, cache_len, pos_dtype=torch.int64, **settings):
    """rope_kv_update over zero-initialized state caches; outputs rope(q) and the caches (times 1)."""
    g = GraphIR()
    dtype = _DTYPES[q.dtype]
    batch, length, _, head_dim = q.shape
    kv_heads = k.shape[2]
    ids = [g.add_value(TensorValue(dtype, tuple(t.shape))) for t in (q, k, k, cos, cos)]
    cache_shape = (batch, cache_len, kv_heads, head_dim)
    caches = [g.add_value(TensorValue(dtype, cache_shape, state=True)) for _ in range(2)]
    pos = g.add_value(TensorValue(_DTYPES[pos_dtype], (length,)))
    g.input_ids = ids + [pos]
    outs = [g.add_value(TensorValue(dtype, tuple(q.shape)))] + [g.add_value(TensorValue(dtype, cache_shape))
                                                                 for _ in range(2)]
    g.chain.append(OpCall("et_vk.vkd_rope_kv_update.default", tuple(ids + caches + [pos] + outs), 3))
    reads = []
    for updated in outs[1:]:
        reads.append(g.add_value(TensorValue(dtype, cache_shape)))
        g.chain.append(OpCall("aten.mul.Scalar", (updated, g.add_value(IntValue(1)), reads[-1])))
    g.output_ids = [outs[0]] + reads
    return rt.Graph(serialize_graph(g), overrides=settings)


def tables(length, head_dim, dtype, seed):
    angles = torch.rand(length, 1, head_dim // 2, generator=torch.Generator().manual_seed(seed)) * 6
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


CASES = [
    # (batch, queries, heads, kv_heads, head_dim, cache_len, positions)
    pytest.param(1, 1, 4, 4, 64, 37, [0], id="decode_position0_mha_d64"),
    pytest.param(1, 1, 8, 2, 64, 300, [150], id="decode_mid_gqa4"),
    pytest.param(1, 1, 6, 2, 16, 40, [39], id="decode_last_position_gqa3"),
    pytest.param(1, 5, 6, 3, 10, 9, [4, 0, 8, 2, 5], id="prefill_out_of_order_d10"),
    pytest.param(2, 3, 4, 1, 8, 12, [9, 10, 11], id="batch2_gqa4_to_the_end"),
]


@pytest.mark.parametrize("pos_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("batch, length, heads, kv_heads, head_dim, cache_len, positions", CASES)
def test_matches_the_eager_reference_and_keeps_the_other_cache_rows(dtype, pos_dtype, batch, length, heads,
                                                                     kv_heads, head_dim, cache_len, positions):
    gen = torch.Generator().manual_seed(length * 100 + cache_len)
    graph = None
    k_cache = torch.zeros(batch, cache_len, kv_heads, head_dim, dtype=dtype)
    v_cache = torch.zeros_like(k_cache)
    # Two steps: the second writes other positions (shifted), and the first step's rows stay.
    for step in range(2):
        q = torch.randn(batch, length, heads, head_dim, generator=gen).to(dtype)
        k = torch.randn(batch, length, kv_heads, head_dim, generator=gen).to(dtype)
        v = torch.randn(batch, length, kv_heads, head_dim, generator=gen).to(dtype)
        cos, sin = tables(length, head_dim, dtype, step)
        pos = (torch.tensor(positions) + step * (length if cache_len >= 2 * length else 0)) % cache_len
        if graph is None:
            graph = op_graph(q, k, cos, cache_len, pos_dtype)
        want_q, k_cache, v_cache = (t.to(dtype) for t in rope_kv_update.default(
            q.float(), k.float(), v.float(), cos.float(), sin.float(), k_cache.float(), v_cache.float(), pos))
        got = graph.run([t.numpy() for t in (q, k, v, cos, sin)] + [pos.to(pos_dtype).numpy()])
        tolerance = 1e-6 if dtype == torch.float32 else 2e-3
        for actual, expected in zip(got, (want_q, k_cache, v_cache)):
            torch.testing.assert_close(torch.from_numpy(actual).float(), expected.float(), atol=tolerance,
                                       rtol=tolerance)
    assert graph.execute_stats()["records"] == 1  # new positions replay the recorded commands
    # The op writes the caches: the reads after it wait for it (one barrier), and read together.
    assert graph.barrier_stats() == (3, 1)


@pytest.mark.parametrize("pos_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("position", [12, 40, -1])
def test_a_position_outside_the_cache_is_an_error_and_writes_nothing(position, pos_dtype):
    q, k = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 2, 8)
    cos, sin = tables(2, 8, torch.float32, 0)
    graph = op_graph(q, k, cos, 12, pos_dtype)
    inputs = [t.numpy() for t in (q, k, k, cos, sin)]
    index_type = np.int64 if pos_dtype == torch.int64 else np.int32
    with pytest.raises(rt.GraphError, match=f"index {position} is out of range for dimension 1 of size 12"):
        graph.run(inputs + [np.array([3, position], dtype=index_type)])
    with pytest.raises(IndexError, match="out of range"):
        rope_kv_update.default(q, k, k, cos, sin, torch.zeros(1, 12, 2, 8), torch.zeros(1, 12, 2, 8),
                               torch.tensor([3, position]))
    # The graph still runs; the faulting step wrote at most its valid row (3), never outside.
    _, k_cache, _ = graph.run(inputs + [np.array([5, 11], dtype=index_type)])
    _, want_k, _ = rope_kv_update.default(q, k, k, cos, sin, torch.zeros(1, 12, 2, 8), torch.zeros(1, 12, 2, 8),
                                          torch.tensor([5, 11]))
    rows = [r for r in range(12) if r != 3]
    torch.testing.assert_close(torch.from_numpy(k_cache)[:, rows], want_k[:, rows], atol=1e-6, rtol=1e-6)


def test_checks_off_skip_the_rows_out_of_range():
    """NO_GPU_CHECKS takes the unchecked kernel: a position out of range is no error, and writes nothing."""
    q, k = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 2, 8)
    cos, sin = tables(2, 8, torch.float32, 0)
    graph = op_graph(q, k, cos, 12, NO_GPU_CHECKS=True)
    assert graph.shaders()[0] == "rope_kv_update_nocheck_f32"
    _, k_cache, v_cache = graph.run([t.numpy() for t in (q, k, k, cos, sin)] + [np.array([3, 12])])
    _, want_k, want_v = rope_kv_update.default(q, k, k, cos, sin, torch.zeros(1, 12, 2, 8), torch.zeros(1, 12, 2, 8),
                                               torch.tensor([3, 0]))
    want_k[:, 0], want_v[:, 0] = 0, 0  # position 12 wrote nowhere
    torch.testing.assert_close(torch.from_numpy(k_cache), want_k, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(torch.from_numpy(v_cache), want_v, atol=1e-6, rtol=1e-6)


def test_bad_shapes_are_a_clear_error():
    q, k = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 2, 8)
    cos = torch.randn(3, 1, 8)  # three positions for two queries
    with pytest.raises(rt.GraphError, match=r"do not fit \(D even\)"):
        op_graph(q, k, cos, 12)


def test_the_caches_must_be_state():
    from vkdelegate.serialization.graph_ir import GraphIR

    g = GraphIR()
    q, k, cos = torch.randn(1, 1, 2, 4), torch.randn(1, 1, 2, 4), torch.randn(1, 1, 4)
    ids = [g.add_value(TensorValue(DType.float32, tuple(t.shape))) for t in (q, k, k, cos, cos)]
    caches = [g.add_value(TensorValue(DType.float32, (1, 5, 2, 4))) for _ in range(2)]
    pos = g.add_value(TensorValue(DType.int64, (1,)))
    g.input_ids = ids + caches + [pos]
    outs = [g.add_value(TensorValue(DType.float32, s)) for s in ((1, 1, 2, 4), (1, 5, 2, 4), (1, 5, 2, 4))]
    g.chain.append(OpCall("et_vk.vkd_rope_kv_update.default", tuple(ids + caches + [pos] + outs), 3))
    g.output_ids = [outs[0]]
    with pytest.raises(rt.GraphError, match="must be a state tensor"):
        rt.Graph(serialize_graph(g))


class _LlamaAttention(torch.nn.Module):
    """One attention layer of examples/models/llama.py over its KV cache, with the Llama's rotary
    tables and position mask: the graph the Llama exports per layer, at a fraction of its export time
    (tests/test_llm.py counts the dispatches of whole decode layers)."""

    def __init__(self, dim=32, heads=4, kv_heads=2, cache_len=16):
        super().__init__()
        from vkdelegate.examples.models.llama import Attention, Llama

        tables = Llama(vocab=8, dim=dim, layers=0, heads=heads, kv_heads=kv_heads, max_seq_len=cache_len)
        self.register_buffer("rope_cos", tables.rope_cos)
        self.register_buffer("rope_sin", tables.rope_sin)
        self.attention = Attention(dim, heads, kv_heads, cache_len)
        self.cache_len = cache_len

    def forward(self, x, input_pos):
        cos, sin = self.rope_cos[input_pos][:, None], self.rope_sin[input_pos][:, None]
        mask = torch.arange(self.cache_len)[None, :] <= input_pos[:, None]
        return self.attention(x, cos, sin, input_pos, mask)


@pytest.mark.parametrize("with_attention", [True, False])
def test_fusion_fires_in_a_llama_layer_and_the_caches_stay_state(monkeypatch, with_attention):
    """Default: rope, cache writes and attention in et_vk.vkd_sdpa_rope_kv (prefill: its rope dispatch and
    the prefill kernel; decode: the split kernel's rope variant); fuse_rope_attention=False: the rope
    and writes in et_vk.vkd_rope_kv_update before et_vk.vkd_sdpa_kv_cache."""
    from executorch.runtime import Runtime

    from vkdelegate.backends import vulkan_preprocess
    from helpers import lower

    chains = []
    build = vulkan_preprocess._build  # what preprocess calls: the graph and its debug handle map

    def recording_build(program, options=None):
        graph, handles = build(program, options)
        chains.append([call.name for call in graph.chain])
        return graph, handles

    monkeypatch.setattr(vulkan_preprocess, "_build", recording_build)
    torch.manual_seed(0)
    module = _LlamaAttention().eval()
    seq = torch.export.Dim("seq", min=1, max=module.cache_len)
    example = (torch.randn(1, 2, 32), torch.arange(2))
    options = None if with_attention else {"fuse_rope_attention": False}
    pte = lower(module, example, options, dynamic_shapes=({1: seq}, {0: seq})).to_executorch().buffer
    (ops,) = chains
    fused = ["et_vk.vkd_sdpa_rope_kv.default"]
    separate = ["et_vk.vkd_rope_kv_update.default", "et_vk.vkd_sdpa_kv_cache.default"]
    for name in fused + separate:
        assert ops.count(name) == int(name in (fused if with_attention else separate))
    assert "aten.index_put.default" not in ops and "et_vk.vkd_rope.default" not in ops
    # Prefill then decode steps: the caches persist inside the delegate, as eager's buffers do.
    method = Runtime.get().load_program(pte).load_method("forward")
    for length, start in ((4, 0), (1, 4), (1, 5), (3, 6)):
        args = (torch.randn(1, length, 32), torch.arange(start, start + length))
        (out,) = method.execute(list(args))
        with torch.no_grad():
            torch.testing.assert_close(out, module(*args), atol=1e-5, rtol=1e-5)


class _CacheWrites(torch.nn.Module):
    """Cache writes without the attention: not the pattern, so index_put and vkd_rope stay."""

    def __init__(self):
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(1, 8, 2, 4))

    def forward(self, k, cos, sin, positions):
        from vkdelegate.quant.library import rope

        self.k_cache.index_copy_(1, positions, rope.default(k, cos, sin))
        return self.k_cache * 2


def test_fusion_leaves_other_cache_writes_alone(monkeypatch):
    from vkdelegate.backends import vulkan_preprocess

    from helpers import lower, run_pte

    seen = []
    run = vulkan_preprocess.run_passes

    def run_passes(program, options):
        run(program, options)
        seen.extend(str(node.target) for node in program.graph.nodes if node.op == "call_function")

    monkeypatch.setattr(vulkan_preprocess, "run_passes", run_passes)
    module = _CacheWrites()
    cos, sin = tables(2, 4, torch.float32, 1)
    inputs = (torch.randn(1, 2, 2, 4), cos, sin, torch.tensor([6, 1]))
    (out,) = run_pte(lower(module, inputs).to_executorch().buffer, inputs)
    torch.testing.assert_close(out, _CacheWrites()(*inputs), atol=1e-6, rtol=1e-6)
    assert any("index_put" in t for t in seen) and not any("rope_kv_update" in t for t in seen)


def fused_graph(batch, length, heads, kv_heads, head_dim, cache_len, **settings):
    """et_vk.vkd_sdpa_rope_kv over zero-initialized state caches; outputs the attention and the caches."""
    g = GraphIR()
    f32 = DType.float32
    shapes = [(batch, length, heads, head_dim)] + [(batch, length, kv_heads, head_dim)] * 2 + [(length, 1, head_dim)] * 2
    ids = [g.add_value(TensorValue(f32, s)) for s in shapes]
    cache_shape = (batch, cache_len, kv_heads, head_dim)
    caches = [g.add_value(TensorValue(f32, cache_shape, state=True)) for _ in range(2)]
    pos = g.add_value(TensorValue(DType.int64, (length,)))
    g.input_ids = ids + [pos]
    outs = [g.add_value(TensorValue(f32, (batch, length, heads, head_dim)))] + [
        g.add_value(TensorValue(f32, cache_shape)) for _ in range(2)]
    g.chain.append(OpCall("et_vk.vkd_sdpa_rope_kv.default", tuple(ids + caches + [pos, g.add_value(NullValue())] + outs),
                          3))
    reads = []
    for updated in outs[1:]:
        reads.append(g.add_value(TensorValue(f32, cache_shape)))
        g.chain.append(OpCall("aten.mul.Scalar", (updated, g.add_value(IntValue(1)), reads[-1])))
    g.output_ids = [outs[0]] + reads
    return rt.Graph(serialize_graph(g), overrides=settings or None)


@pytest.mark.parametrize("settings", [{}, {"SDPA_KV_ONE_PASS": True}, {"NO_SUBGROUP_OPS": True},
                                      {"SDPA_KV_ONE_PASS": True, "SDPA_KV_CHUNK": 16}],
                         ids=["default", "one_pass", "no_subgroup_ops", "one_pass_chunk16"])
def test_fused_decode_steps_across_chunk_edges_and_a_fault(settings):
    """Decode steps of et_vk.vkd_sdpa_rope_kv (the split kernel's rope variant, and its one-pass
    combine variant) replaying one recorded graph: each step's key and value come from the step's
    rows and are written into the caches for the next; positions across chunk edges (chunks of 4 keys,
    16 with the setting), a rewrite of an earlier row, and a position past the cache (an error naming it,
    no row written) midway."""
    from vkdelegate.quant.library import sdpa_rope_kv

    batch, heads, kv_heads, head_dim, cache_len = 1, 8, 2, 16, 40
    graph = fused_graph(batch, 1, heads, kv_heads, head_dim, cache_len, **settings)
    k_cache = torch.zeros(batch, cache_len, kv_heads, head_dim)
    v_cache = torch.zeros_like(k_cache)
    generator = torch.Generator().manual_seed(7)
    for step, position in enumerate([0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 39, 6, 12]):
        q, k, v = (torch.randn(batch, 1, h, head_dim, generator=generator) for h in (heads, kv_heads, kv_heads))
        cos, sin = tables(1, head_dim, torch.float32, step)
        if step == 9:
            with pytest.raises(rt.GraphError, match=f"index {cache_len} is out of range"):
                graph.run([t.numpy() for t in (q, k, v, cos, sin, torch.tensor([cache_len]))])
        positions = torch.tensor([position])
        out, k_read, v_read = graph.run([t.numpy() for t in (q, k, v, cos, sin, positions)])
        want, k_cache, v_cache = sdpa_rope_kv.default(q, k, v, cos, sin, k_cache, v_cache, positions)
        torch.testing.assert_close(torch.from_numpy(out), want, atol=1e-5, rtol=1e-5, msg=lambda m: f"step {step}: {m}")
        torch.testing.assert_close(torch.from_numpy(k_read), k_cache, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(torch.from_numpy(v_read), v_cache, atol=0, rtol=0)
    stats = graph.execute_stats()
    assert stats["records"] == 1
    assert stats["dispatches"] == (1 if settings.get("SDPA_KV_ONE_PASS") else 2) + 2  # + the two reads
