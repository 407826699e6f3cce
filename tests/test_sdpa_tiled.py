"""aten.scaled_dot_product_attention's kernels against eager PyTorch: in float16 on a device with
cooperative matrices, the cooperative-matrix kernel (glsl/sdpa_coop.glslh: blocks of 16 query rows, up to
256 keys, head dims multiples of 8 up to 128; on lavapipe its emulated twin, the setting COOPMAT_EMULATE);
the block kernel (glsl/sdpa_block.glsl: blocks of 4 query rows with plain arithmetic, up to 256 keys, head dims
up to 128; the default on a GPU, forced here with SDPA_KERNEL=block); the tiled kernel
(glsl/sdpa_tiled.glsl: blocks of 32 query rows of a KV head, key tiles of 32 (head dims up to 64) or 16
(up to 128)), forced with SDPA_KERNEL=tiled on these small cases and chosen by default from 16 queries and
128 workgroups; else, up to 512 keys, the short kernel (glsl/sdpa_short.glsl: blocks of up to 4 query
rows holding whole score rows in shared memory); a mask, more keys or SDPA_KERNEL=rows, a workgroup per
query row (glsl/sdpa.glsl). The op runs alone in a small blob, so each case costs milliseconds; each asserts the
shader it ran."""
import pytest
import torch
from torch.nn import functional as F

import vkdelegate.runtime as rt
from vkdelegate.serialization.blob import serialize_graph
from vkdelegate.serialization.graph_ir import (BoolValue, DType, DoubleValue, GraphIR, NullValue, OpCall,
                                               TensorValue)

SDPA_TILED_MIN_QUERIES = 16  # runtime/ops/attention.cpp: kSdpaTiledMinQueries
SHORT_MAX_KEYS = 512  # runtime/ops/attention.cpp: kShortAttentionMaxKeys
COOP_MAX_KEYS = 256  # runtime/ops/attention.cpp: kCoopAttentionMaxKeys
BLOCK_MAX_KEYS = 256  # runtime/ops/attention.cpp: kBlockAttentionMaxKeys

_DTYPES = {torch.float32: DType.float32, torch.float16: DType.float16, torch.bool: DType.bool_}


def sdpa_graph(q, k, v, mask=None, is_causal=False, scale=None, enable_gqa=False, dynamic=False, **settings):
    """The op alone; dynamic: every input's L and S may shrink to 1 (the given sizes the upper bounds)."""
    g = GraphIR()
    tensors = [t for t in (q, k, v, mask) if t is not None]
    lows = lambda t: (tuple(t.shape[:-2]) + (1, t.shape[-1])) if dynamic else ()
    ids = [g.add_value(TensorValue(_DTYPES[t.dtype], tuple(t.shape), min_sizes=lows(t))) for t in tensors]
    g.input_ids = list(ids)
    out = g.add_value(TensorValue(_DTYPES[q.dtype], tuple(q.shape[:-1]) + (v.shape[-1],)))
    args = (ids[0], ids[1], ids[2], ids[3] if mask is not None else g.add_value(NullValue()),
            g.add_value(DoubleValue(0.0)), g.add_value(BoolValue(is_causal)),
            g.add_value(DoubleValue(scale)) if scale is not None else g.add_value(NullValue()),
            g.add_value(BoolValue(enable_gqa)), out)
    g.chain.append(OpCall("aten.scaled_dot_product_attention.default", args))
    g.output_ids = [out]
    return rt.Graph(serialize_graph(g), overrides=settings or None), tensors


TILED = {"SDPA_KERNEL": "tiled"}
SHORT = {"SDPA_KERNEL": "short"}
BLOCK = {"SDPA_KERNEL": "block"}


def coop_kernel():
    """(settings, shader base) of the cooperative-matrix kernel here: the real one on a device with
    16x16x16 half cooperative matrices and subgroups of 32 (the suite run on a GPU), else its emulated
    twin (lavapipe)."""
    info = rt.device_info()
    if info["cooperative_matrix"] and info["subgroup_size"] == 32 and "16x16x16 f16->f32" in info["cooperative_matrix_shapes"]:
        return {}, "sdpa_coop"
    return {"COOPMAT_EMULATE": True}, "sdpa_coop_emu"


def check(q, k, v, shader, mask=None, settings=None, **kwargs):
    graph, tensors = sdpa_graph(q, k, v, mask, **kwargs, **(settings or {}))
    assert [s for _, s in graph.dispatches()] == [shader + ("_f16" if q.dtype == torch.float16 else "_f32")]
    (out,) = graph.run([t.numpy() for t in tensors])
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                              attn_mask=mask if mask is None or mask.dtype == torch.bool else mask.float(),
                                              **kwargs)
    tolerance = 1e-5 if q.dtype == torch.float32 else 2e-3
    torch.testing.assert_close(torch.from_numpy(out).float(), expected, atol=tolerance, rtol=tolerance)


def check_replays(q, k, v, shader, settings=None):
    """The kernel `shader` chosen at the upper bounds (q, k, v: causal, grouped heads, every L and S dynamic)
    also runs what resizes give: the bounds, fewer queries and keys than a block or tile, a single query."""
    graph, _ = sdpa_graph(q, k, v, is_causal=True, enable_gqa=True, dynamic=True, **(settings or {}))
    assert [s for _, s in graph.dispatches()] == [shader + ("_f16" if q.dtype == torch.float16 else "_f32")]
    tolerance = 1e-5 if q.dtype == torch.float32 else 2e-3
    for L, S in ((q.shape[-2], k.shape[-2]), (5, 7), (1, 1), (33, 40)):
        args = (q[:, :, :L], k[:, :, :S], v[:, :, :S])
        (out,) = graph.run([t.contiguous().numpy() for t in args])
        expected = F.scaled_dot_product_attention(*(t.float() for t in args), is_causal=True, enable_gqa=True)
        torch.testing.assert_close(torch.from_numpy(out).float(), expected, atol=tolerance, rtol=tolerance)


def qkv(lead, heads, L, S, E, kv_heads=None, Ev=None, dtype=torch.float32):
    """q [*lead, heads, L, E], k and v [*lead, kv_heads, S, E or Ev]; heads None: no heads dim."""
    h, kh = ((heads,), (kv_heads or heads,)) if heads is not None else ((), ())
    return (torch.randn(*lead, *h, L, E).to(dtype), torch.randn(*lead, *kh, S, E).to(dtype),
            torch.randn(*lead, *kh, S, Ev or E).to(dtype))


TILED_CASES = [
    # (lead dims, heads, kv heads, L, S, E, Ev, causal): L and S not multiples of the block (32) or the
    # key tile (32 / 16), causal with L != S both ways, grouped heads, E != Ev, E = 128, ranks 2 to 5.
    pytest.param((1,), 3, 3, 197, 197, 64, 64, False, id="vit_tiny_shape"),
    pytest.param((2,), 2, 2, 45, 70, 16, 24, False, id="ragged_blocks_and_tiles_ev24"),
    pytest.param((1,), 2, 2, 40, 29, 8, 8, True, id="causal_L_above_S"),
    pytest.param((2,), 2, 2, 19, 50, 33, 33, True, id="causal_S_above_L_odd_dim"),
    pytest.param((2,), 8, 2, 21, 37, 32, 20, True, id="gqa_ratio4_causal_ev20"),
    pytest.param((1,), 6, 3, 33, 18, 128, 100, False, id="d128_gqa_ratio2"),
    pytest.param((), None, None, 16, 40, 64, 64, True, id="rank2_at_the_threshold"),
    pytest.param((), 5, 5, 17, 9, 12, 7, False, id="rank3"),
    pytest.param((2, 3), 2, 1, 20, 33, 16, 16, True, id="rank5_gqa"),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("lead, heads, kv_heads, L, S, E, Ev, causal", TILED_CASES)
def test_tiled_kernel_matches_eager(dtype, lead, heads, kv_heads, L, S, E, Ev, causal):
    torch.manual_seed(L * 100 + S)
    q, k, v = qkv(lead, heads, L, S, E, kv_heads, Ev, dtype)
    variant = "sdpa_tiled_d64" if max(E, Ev) <= 64 else "sdpa_tiled_d128"
    assert q.dim() == len(lead) + (2 if heads is None else 3)
    check(q, k, v, variant, settings=TILED, is_causal=causal, enable_gqa=heads != kv_heads)


def test_scale_and_rows_that_see_one_key():
    """A given scale; causal row 0 sees key 0 alone (its first tile's other keys all masked)."""
    torch.manual_seed(0)
    q, k, v = qkv((1,), 2, 35, 35, 8)
    check(q * 4, k * 4, v, "sdpa_tiled_d64", settings=TILED, is_causal=True, scale=0.3)


def test_sizes_below_the_planned_ones_replay_the_tiled_kernel():
    """Chosen at the upper bounds, the tiled kernel also runs what a resize gives: fewer queries than
    the threshold, fewer keys than a tile, a single query."""
    torch.manual_seed(1)
    q, k, v = qkv((1,), 4, 48, 40, 16, kv_heads=2, Ev=12)
    check_replays(q, k, v, "sdpa_tiled_d64", TILED)


ROW_KERNEL_CASES = [
    # (queries, keys, head dim, causal, mask, settings): each keeps the row kernel.
    pytest.param(SDPA_TILED_MIN_QUERIES - 1, SHORT_MAX_KEYS + 1, 16, False, None, {}, id="keys_above_the_short_kernel"),
    pytest.param(40, 23, 16, False, None, {"SDPA_KERNEL": "rows"}, id="the_setting"),
    pytest.param(40, 23, 16, True, None, {"SDPA_KERNEL": "rows"}, id="causal_with_the_setting"),
    pytest.param(40, 23, 16, False, "bool", {}, id="a_bool_mask"),
    pytest.param(40, 23, 16, False, "float", {}, id="a_float_mask"),
    pytest.param(40, SHORT_MAX_KEYS + 1, 160, False, None, {"SDPA_KERNEL": "tiled"}, id="tiled_forced_where_none_holds"),
]


@pytest.mark.parametrize("L, S, E, causal, mask_kind, settings", ROW_KERNEL_CASES)
def test_row_kernel_cases(L, S, E, causal, mask_kind, settings):
    torch.manual_seed(L + E)
    q, k, v = qkv((2,), 2, L, S, E)
    mask, shader = None, "sdpa"
    if mask_kind == "bool":
        mask, shader = torch.rand(L, S) < 0.7, "sdpa_bool_mask"
    elif mask_kind == "float":
        mask, shader = torch.randn(2, 1, L, S), "sdpa_float_mask"
    check(q, k, v, shader, mask=mask, settings=settings, is_causal=causal)


@pytest.mark.parametrize("lead, heads, L, shader, on_gpu", [
    pytest.param((1,), 3, 197, "sdpa_short", "sdpa_block_d64", id="vit_tiny_21_workgroups"),
    pytest.param((2,), 4, 17, "sdpa_short", "sdpa_short", id="block_kernel_40_workgroups"),
    pytest.param((16,), 8, 32, "sdpa_tiled_d64", "sdpa_tiled_d64", id="128_workgroups"),
])
def test_default_choice_by_workgroups(lead, heads, L, shader, on_gpu):
    """Unforced: the tiled kernel only where its grid has 128 workgroups (each walks the keys in turn:
    ViT-tiny's 21 ran slower than a workgroup per row on the H100); below that, on a GPU, the block kernel
    from 64 of its workgroups (ViT-tiny's 150 blocks of 4 rows), else the short kernel (a CPU device: always)."""
    torch.manual_seed(2)
    q, k, v = qkv(lead, heads, L, L, 64)
    check(q, k, v, on_gpu if rt.device_info()["type"] != "cpu" else shader)


SHORT_CASES = [
    # (lead dims, heads, kv heads, L, S, E, Ev, causal): odd L and S, causal with L != S both ways, grouped
    # heads, E != Ev, ranks 2 to 5 (ViT-tiny's shape: test_default_choice_by_workgroups); blocks of 4, 2 and 1 query rows (by the grid: 128 workgroups), the
    # output's keys split between invocations (R * Ev below 128) or two outputs an invocation (above), E = 256,
    # S at the bound.
    pytest.param((1,), 16, 16, 17, 17, 16, 16, True, id="rows2_causal"),
    pytest.param((4,), 8, 8, 21, 21, 16, 16, True, id="rows4_causal"),
    pytest.param((2,), 2, 2, 9, 13, 24, 40, False, id="rows1_keys_split_e24_ev40"),
    pytest.param((1,), 2, 2, 21, 13, 8, 8, True, id="causal_L_above_S"),
    pytest.param((2,), 2, 2, 7, 19, 33, 33, True, id="causal_S_above_L_odd_dim"),
    pytest.param((2,), 8, 2, 11, 37, 32, 20, True, id="gqa_ratio4_causal_ev20"),
    pytest.param((), None, None, 5, 17, 16, 16, False, id="rank2"),
    pytest.param((), 5, 5, 17, 9, 12, 7, False, id="rank3"),
    pytest.param((2, 3), 2, 1, 6, 11, 16, 16, True, id="rank5_gqa"),
    pytest.param((1,), 1, 1, 3, 5, 256, 256, False, id="head_dim_256"),
    # Blocks of 4 rows of Ev 64: each invocation's two outputs (o, o + 128) in rows with other last keys.
    pytest.param((1,), 4, 4, 129, 129, 64, 64, True, id="rows4_causal_output_pairs"),
    pytest.param((1,), 1, 1, 4, SHORT_MAX_KEYS, 8, 8, False, id="keys_at_the_bound"),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("lead, heads, kv_heads, L, S, E, Ev, causal", SHORT_CASES)
def test_short_kernel_matches_eager(dtype, lead, heads, kv_heads, L, S, E, Ev, causal):
    torch.manual_seed(L * 100 + S)
    q, k, v = qkv(lead, heads, L, S, E, kv_heads, Ev, dtype)
    assert q.dim() == len(lead) + (2 if heads is None else 3)
    check(q, k, v, "sdpa_short", settings=SHORT, is_causal=causal, enable_gqa=heads != kv_heads)


def test_short_kernel_scale_and_large_scores():
    """A given scale; scores far above exp's float range (the row max is subtracted)."""
    torch.manual_seed(3)
    q, k, v = qkv((1,), 2, 9, 30, 8)
    check(q * 30, k * 30, v, "sdpa_short", is_causal=True, scale=0.9)


COOP_CASES = [
    # (lead dims, heads, kv heads, L, S, E, Ev, causal): ViT-tiny's shape; rows and keys not multiples of the
    # block (16), the key tile (16) or the chunk (64, 32); causal with L != S both ways (blocks whose rows
    # count different keys; rows past L); grouped heads; E != Ev; head dims 8 to 128 (both variants); ranks
    # 2 to 5; S at the bound; one key.
    pytest.param((1,), 3, 3, 197, 197, 64, 64, False, id="vit_tiny_shape"),
    pytest.param((2,), 2, 2, 45, 70, 16, 24, False, id="ragged_e16_ev24"),
    pytest.param((1,), 2, 2, 40, 29, 8, 8, True, id="causal_L_above_S"),
    pytest.param((2,), 2, 2, 19, 50, 32, 32, True, id="causal_S_above_L"),
    pytest.param((2,), 8, 2, 21, 37, 32, 24, True, id="gqa_ratio4_causal_ev24"),
    pytest.param((1,), 6, 3, 33, 70, 128, 96, False, id="d128_gqa_ratio2"),
    pytest.param((1,), 2, 2, 17, 45, 72, 128, True, id="d128_e72_causal"),
    pytest.param((), None, None, 16, 40, 64, 64, True, id="rank2"),
    pytest.param((), 5, 5, 17, 9, 48, 8, False, id="rank3"),
    pytest.param((2, 3), 2, 1, 20, 33, 16, 16, True, id="rank5_gqa"),
    pytest.param((1,), 1, 1, 18, COOP_MAX_KEYS, 64, 64, False, id="keys_at_the_bound"),
    pytest.param((1,), 2, 2, 35, 1, 8, 8, False, id="one_key"),
]


@pytest.mark.parametrize("lead, heads, kv_heads, L, S, E, Ev, causal", COOP_CASES)
def test_coop_kernel_matches_eager(lead, heads, kv_heads, L, S, E, Ev, causal):
    torch.manual_seed(L * 100 + S)
    q, k, v = qkv(lead, heads, L, S, E, kv_heads, Ev, torch.float16)
    settings, shader = coop_kernel()
    check(q, k, v, shader + ("_d64" if max(E, Ev) <= 64 else "_d128"), settings=settings, is_causal=causal,
          enable_gqa=heads != kv_heads)


def test_coop_kernel_scale_and_large_scores():
    """A given scale; scores far above exp's range (the row max is subtracted); causal row 0 sees key 0 alone."""
    torch.manual_seed(6)
    q, k, v = qkv((1,), 2, 20, 30, 16, dtype=torch.float16)
    settings, shader = coop_kernel()
    check(q * 30, k * 30, v, shader + "_d64", settings=settings, is_causal=True, scale=0.9)


@pytest.mark.parametrize("L, S, E, dtype, shader", [
    pytest.param(20, COOP_MAX_KEYS + 1, 64, torch.float16, "sdpa_short", id="keys_above_the_bound"),
    pytest.param(20, 30, 12, torch.float16, "sdpa_short", id="head_dim_not_a_multiple_of_8"),
    pytest.param(20, 30, 136, torch.float16, "sdpa_short", id="head_dim_above_128"),
    pytest.param(20, 30, 64, torch.float32, "sdpa_short", id="float32"),
])
def test_coop_kernel_bounds(L, S, E, dtype, shader):
    """Outside the cooperative-matrix kernel's bounds the short kernel takes the op."""
    torch.manual_seed(7)
    q, k, v = qkv((1,), 2, L, S, E, dtype=dtype)
    settings, _ = coop_kernel()
    check(q, k, v, shader, settings=settings)


def test_coop_kernel_forced_where_it_does_not_apply():
    """SDPA_KERNEL=coop takes it wherever it applies; else (float32) the row kernel."""
    torch.manual_seed(8)
    q, k, v = qkv((1,), 2, 20, 30, 16)
    settings, _ = coop_kernel()
    check(q, k, v, "sdpa", settings={**settings, "SDPA_KERNEL": "coop"})


def test_sizes_below_the_planned_ones_replay_the_coop_kernel():
    """Chosen at the upper bounds, the cooperative-matrix kernel also runs what a resize gives: fewer
    rows than a block, fewer keys than a tile, a single query."""
    torch.manual_seed(9)
    q, k, v = qkv((1,), 4, 60, 70, 16, kv_heads=2, Ev=24, dtype=torch.float16)
    settings, shader = coop_kernel()
    check_replays(q, k, v, shader + "_d64", settings)


BLOCK_CASES = [
    # (lead dims, heads, kv heads, L, S, E, Ev, causal): ViT-tiny's shape; rows and keys not multiples of the
    # block (8) or the chunk (64, 32); causal with L != S both ways (blocks whose rows count different keys;
    # rows past L); grouped heads; E != Ev, odd head dims, both variants (up to 64, up to 128); ranks 2 to 5;
    # S at the bound; one key.
    pytest.param((1,), 3, 3, 197, 197, 64, 64, False, id="vit_tiny_shape"),
    pytest.param((2,), 2, 2, 45, 70, 16, 24, False, id="ragged_e16_ev24"),
    pytest.param((1,), 2, 2, 21, 13, 8, 8, True, id="causal_L_above_S"),
    pytest.param((2,), 2, 2, 7, 70, 33, 33, True, id="causal_S_above_L_odd_dim"),
    pytest.param((2,), 8, 2, 11, 37, 32, 20, True, id="gqa_ratio4_causal_ev20"),
    pytest.param((1,), 6, 3, 33, 70, 128, 96, False, id="d128_gqa_ratio2"),
    pytest.param((1,), 2, 2, 17, 45, 65, 127, True, id="d128_odd_dims_causal"),
    pytest.param((), None, None, 5, 17, 16, 16, False, id="rank2"),
    pytest.param((), 5, 5, 17, 9, 12, 7, False, id="rank3"),
    pytest.param((2, 3), 2, 1, 6, 11, 16, 16, True, id="rank5_gqa"),
    pytest.param((1,), 1, 1, 18, BLOCK_MAX_KEYS, 64, 64, False, id="keys_at_the_bound"),
    pytest.param((1,), 2, 2, 35, 1, 8, 8, False, id="one_key"),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("lead, heads, kv_heads, L, S, E, Ev, causal", BLOCK_CASES)
def test_block_kernel_matches_eager(dtype, lead, heads, kv_heads, L, S, E, Ev, causal):
    torch.manual_seed(L * 100 + S)
    q, k, v = qkv(lead, heads, L, S, E, kv_heads, Ev, dtype)
    check(q, k, v, "sdpa_block" + ("_d64" if max(E, Ev) <= 64 else "_d128"), settings=BLOCK, is_causal=causal,
          enable_gqa=heads != kv_heads)


def test_block_kernel_scale_and_large_scores():
    """A given scale; scores far above exp's range (the row max is subtracted); causal row 0 sees key 0 alone."""
    torch.manual_seed(10)
    q, k, v = qkv((1,), 2, 20, 90, 16)
    check(q * 30, k * 30, v, "sdpa_block_d64", settings=BLOCK, is_causal=True, scale=0.9)


@pytest.mark.parametrize("S, E, shader", [
    pytest.param(BLOCK_MAX_KEYS + 1, 64, "sdpa", id="keys_above_the_bound"),
    pytest.param(30, 136, "sdpa", id="head_dim_above_128"),
    pytest.param(30, 100, "sdpa_block_d128", id="head_dim_above_64"),
])
def test_block_kernel_bounds(S, E, shader):
    """Forced, the block kernel takes the op within its bounds; outside them the row kernel (as forced coop)."""
    torch.manual_seed(11)
    q, k, v = qkv((1,), 2, 20, S, E)
    check(q, k, v, shader, settings=BLOCK)


def test_sizes_below_the_planned_ones_replay_the_block_kernel():
    """Chosen at the upper bounds, the block kernel also runs what a resize gives: fewer rows than a
    block, fewer keys than a chunk, a single query."""
    torch.manual_seed(12)
    q, k, v = qkv((1,), 4, 60, 70, 16, kv_heads=2, Ev=24)
    check_replays(q, k, v, "sdpa_block_d64", BLOCK)


def test_short_kernel_forced_where_the_tiled_one_pays():
    torch.manual_seed(4)
    q, k, v = qkv((16,), 8, 32, 32, 16)
    check(q, k, v, "sdpa_tiled_d64")
    check(q, k, v, "sdpa_short", settings={"SDPA_KERNEL": "short"})


def test_sizes_below_the_planned_ones_replay_the_short_kernel():
    """Chosen at the upper bounds, the short kernel also runs what a resize gives (its rows a block
    chosen again for the smaller grid)."""
    torch.manual_seed(5)
    q, k, v = qkv((1,), 4, 60, 40, 16, kv_heads=2, Ev=12)
    check_replays(q, k, v, "sdpa_short")
