"""backends/packed_attention.py: attention of a packed q|k|v projection (reshape -> permute -> select x3
-> sdpa -> transpose, as a ViT block writes it) runs as one et_vk.vkd_sdpa_qkv dispatch, with no layout
copies around it; causal and scaled too (float16: the op's samples in test_ops.py, the models' in
test_fp16.py). Look-alikes it must leave alone (a select used elsewhere, q/k/v out of order, other
permutes, an output kept in heads-first layout, more tokens than the kernel holds) keep their ops.
Results match eager."""
import pytest
import torch
from torch.nn import functional as F

from helpers import dispatch_ops, lower, run_pte
from kernel_check import chosen_shaders, run_forcing
from vkdelegate.examples.models.transformer import TransformerBlock
from vkdelegate.examples.models.vit import ViTBlock

FUSED = "et_vk.vkd_sdpa_qkv.default"
LN_LINEAR = "et_vk.vkd_ln_linear.default"
COPIES = ("aten.permute_copy.default", "aten.select_copy.int")


class PackedAttention(torch.nn.Module):
    """A ViT block's attention; `variant` makes a look-alike."""

    def __init__(self, heads: int, variant: str = "", causal: bool = False, scale=None):
        super().__init__()
        self.heads, self.variant, self.causal, self.scale = heads, variant, causal, scale

    def forward(self, qkv):
        b, t, c3 = qkv.shape
        hd = c3 // (3 * self.heads)
        perm = (2, 0, 3, 1, 4) if self.variant != "other_permute" else (2, 0, 1, 3, 4)
        parts = qkv.reshape(b, t, 3, self.heads, hd).permute(*perm)
        q, k, v = parts[0], parts[1], parts[2]
        if self.variant == "swapped":
            q, k = k, q
        out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, scale=self.scale)
        if self.variant == "heads_first":
            return out
        merged = out.transpose(1, 2).reshape(b, t, c3 // 3)
        if self.variant == "select_used_elsewhere":
            return merged, v * 2
        return merged


def check(model, inputs, fused, tolerance=1e-5):
    em = lower(model.eval(), inputs)
    ops = dispatch_ops(em)
    if fused:
        assert ops.count(FUSED) == 1 and not any(op in COPIES for op in ops), ops
        assert "aten.scaled_dot_product_attention.default" not in ops, ops
    else:
        assert FUSED not in ops and "aten.scaled_dot_product_attention.default" in ops, ops
    for ours, ref in zip(run_pte(em.to_executorch().buffer, inputs), torch.utils._pytree.tree_leaves(model(*inputs))):
        torch.testing.assert_close(ours, ref, rtol=tolerance, atol=tolerance)
    return em, ops


@pytest.mark.parametrize("heads, tokens, head_dim, causal, scale", [
    pytest.param(3, 13, 8, False, None, id="h3_t13_d8"),
    pytest.param(2, 9, 20, True, 0.3, id="causal_scale_h2_t9_d20"),
])
def test_packed_attention_fuses(heads, tokens, head_dim, causal, scale):
    torch.manual_seed(tokens)
    check(PackedAttention(heads, causal=causal, scale=scale), (torch.randn(2, tokens, 3 * heads * head_dim),), True)


@pytest.mark.parametrize("variant", ["select_used_elsewhere", "swapped", "other_permute", "heads_first"])
def test_look_alikes_keep_their_ops(variant):
    torch.manual_seed(1)
    check(PackedAttention(2, variant), (torch.randn(1, 7, 2 * 3 * 8),), False)


def test_more_tokens_than_the_kernel_holds_keep_their_ops():
    from vkdelegate.op_registry import SDPA_QKV_MAX_TOKENS
    torch.manual_seed(2)
    em = lower(PackedAttention(1).eval(), (torch.randn(1, SDPA_QKV_MAX_TOKENS + 1, 3 * 4),))
    assert FUSED not in dispatch_ops(em)


def test_vit_block_attention_is_one_dispatch():
    """The attention of a ViT block: one dispatch between the qkv linear and the projection, where sdpa
    and the layout copies around it took five (the residual adds ride in the linears' epilogues)."""
    torch.manual_seed(3)
    block, x = ViTBlock(48, 3, 96).eval(), (torch.randn(1, 17, 48),)
    em, ops = check(block, x, True, tolerance=1e-4)
    # The norm and the qkv linear are one op (backends/ln_linear_fusion.py), one dispatch for 17 rows (gemv_ln).
    assert ops[:3] == [LN_LINEAR, FUSED, "et_vk.vkd_linear_act.default"], ops
    assert [s for s in chosen_shaders(em) if s.startswith("sdpa")] == ["sdpa_short_f32"]


def test_half_packed_attention_on_cooperative_matrices():
    """In float16 the fused op takes the cooperative-matrix kernel, q, k and v read in place from the packed
    rows (their offsets and rows multiples of 8 elements); causal, three heads, rows past a block."""
    from test_sdpa_tiled import coop_kernel
    torch.manual_seed(5)
    model, x = PackedAttention(3, causal=True).eval().half(), torch.randn(2, 37, 3 * 3 * 16).half()
    settings, shader = coop_kernel()
    run = run_forcing(model, (x,), **settings)
    assert [s for s in run.shaders if s.startswith("sdpa")] == [shader + "_d64_f16"]
    torch.testing.assert_close(run.outputs[0].float(), model.float()(x.float()), atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_packed_attention_on_the_block_kernel(dtype):
    """The block kernel (a GPU's default for ViT-sized attention, forced here) reads q, k and v in place
    from the packed rows at any offset: causal, odd head dims, rows past a block, two batches."""
    torch.manual_seed(6)
    model, x = PackedAttention(3, causal=True).eval().to(dtype), torch.randn(2, 37, 3 * 3 * 13).to(dtype)
    run = run_forcing(model, (x,), SDPA_KERNEL="block")
    assert [s for s in run.shaders if s.startswith("sdpa")] == ["sdpa_block_d64_" + ("f32" if dtype == torch.float32 else "f16")]
    tolerance = 1e-5 if dtype == torch.float32 else 2e-3
    torch.testing.assert_close(run.outputs[0].float(), model.float()(x.float()), atol=tolerance, rtol=tolerance)


def test_attention_written_out_by_hand_on_a_packed_projection_fuses_too():
    """examples/models/transformer.py's block: fuse_manual_attention makes the sdpa first (the bmm chain it
    leaves still holds the selects until dead code goes)."""
    torch.manual_seed(4)
    block, x = TransformerBlock(dim=32, heads=2).eval(), (torch.randn(2, 11, 32),)
    em, ops = check(block, x, True, tolerance=1e-4)
    assert ops[:3] == [LN_LINEAR, FUSED, "et_vk.vkd_linear_act.default"], ops


class LlamaAttention(torch.nn.Module):
    """A Llama block's attention after its projections: heads in [B, T, heads, D], transposed for sdpa and back;
    `variant` makes a look-alike (a transpose kept as an output, a mask)."""

    def __init__(self, variant: str = ""):
        super().__init__()
        self.variant = variant

    def forward(self, q, k, v):
        b, t = q.shape[:2]
        kt = k.transpose(1, 2)
        mask = torch.ones(t, k.shape[1], dtype=torch.bool).tril() if self.variant == "mask" else None
        out = F.scaled_dot_product_attention(q.transpose(1, 2), kt, v.transpose(1, 2), attn_mask=mask,
                                             is_causal=mask is None, enable_gqa=True)
        merged = out.transpose(1, 2).reshape(b, t, -1)
        return (merged, kt * 2) if self.variant == "transpose_used_elsewhere" else merged


def test_llama_attention_without_its_transposes():
    """transpose x3 -> sdpa -> transpose (GQA, causal) runs as one et_vk.vkd_sdpa_bthd dispatch reading and writing
    [B, T, heads, D] in place; a transpose used elsewhere or a mask keeps the ops. The llama example's four blocks
    lose their 16 copies."""
    torch.manual_seed(11)
    x = (torch.randn(2, 19, 8, 16), torch.randn(2, 19, 2, 16), torch.randn(2, 19, 2, 16))
    model = LlamaAttention().eval()
    em = lower(model, x)
    ops = dispatch_ops(em)
    assert ops.count("et_vk.vkd_sdpa_bthd.default") == 1 and "aten.permute_copy.default" not in ops, ops
    (out,) = run_pte(em.to_executorch().buffer, x)
    torch.testing.assert_close(out, model(*x), rtol=1e-4, atol=1e-4)
    for variant in ("transpose_used_elsewhere", "mask"):
        ops = dispatch_ops(lower(LlamaAttention(variant).eval(), x))
        assert "et_vk.vkd_sdpa_bthd.default" not in ops and "aten.permute_copy.default" in ops, (variant, ops)
    from vkdelegate.examples.models import MODELS
    llama, inputs = MODELS["llama"]()
    ops = dispatch_ops(lower(llama.eval(), inputs))
    assert ops.count("et_vk.vkd_sdpa_bthd.default") == 4 and "aten.permute_copy.default" not in ops, ops


def test_bthd_bad_shapes_are_a_clear_error():
    """The op alone in a blob (the graph checks what the export would have): q's heads not a multiple of k's,
    k and v of different lengths, a rank other than 4."""
    import vkdelegate.runtime as rt
    from vkdelegate.serialization.blob import serialize_graph
    from vkdelegate.serialization.graph_ir import BoolValue, DType, GraphIR, NullValue, OpCall, TensorValue

    def graph(q, k, v):
        g = GraphIR()
        ids = [g.add_value(TensorValue(DType.float32, shape)) for shape in (q, k, v)]
        g.input_ids = list(ids)
        out = g.add_value(TensorValue(DType.float32, tuple(q[:3]) + (v[-1],)))
        g.chain.append(OpCall("et_vk.vkd_sdpa_bthd.default",
                              tuple(ids) + (g.add_value(BoolValue(False)), g.add_value(NullValue()), out)))
        g.output_ids = [out]
        return rt.Graph(serialize_graph(g))

    for shapes, message in ((((1, 4, 3, 8), (1, 4, 2, 8), (1, 4, 2, 8)), "multiple of k's"),
                            (((1, 4, 2, 8), (1, 4, 2, 8), (1, 5, 2, 8)), "do not fit q"),
                            (((1, 4, 8), (1, 4, 8), (1, 4, 8)), r"must be \[B, T, heads, D\]")):
        with pytest.raises(rt.GraphError, match=message):
            graph(*shapes)
