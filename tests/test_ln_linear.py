"""backends/ln_linear_fusion.py: a layer norm whose output feeds one linear (a transformer block's norm
before its qkv projection and before its first FFN linear) runs as et_vk.vkd_ln_linear. In float16 on a
device with cooperative matrices the product's kernel normalizes the rows as it fetches them
(matmul_coop.glslh: LN_A; on lavapipe its emulated twin, the setting COOPMAT_EMULATE), one dispatch, and so does
gemv.glsl's _ln variant for few rows in any float dtype; elsewhere (float32, no cooperative matrices, rows that are
not multiples of 8 halves) the runtime runs the layer norm's kernel first. Look-alikes (a norm output used twice, a residual after the linear) keep their ops. Results
match eager."""
import torch

from helpers import dispatch_ops, lower, run_pte
from kernel_check import run_forcing
from vkdelegate.examples.models.vit import ViTBlock

FUSED = "et_vk.vkd_ln_linear.default"
EMULATE = {"COOPMAT_EMULATE": True}


class NormLinear(torch.nn.Module):
    def __init__(self, k, n, act=False, reuse=False):
        super().__init__()
        self.norm, self.linear, self.act, self.reuse = torch.nn.LayerNorm(k), torch.nn.Linear(k, n), act, reuse
        with torch.no_grad():
            self.norm.weight.uniform_(-2, 2)
            self.norm.bias.uniform_(-1, 1)

    def forward(self, x):
        h = self.norm(x)
        y = self.linear(h)
        y = torch.nn.functional.gelu(y) if self.act else y
        return (y, h * 2) if self.reuse else y


def test_vit_block_norms_fuse_into_their_linears():
    torch.manual_seed(0)
    block, x = ViTBlock(48, 3, 96).eval(), (torch.randn(1, 17, 48),)
    em = lower(block, x)
    ops = dispatch_ops(em)
    # 17 rows: gemv.glsl's _ln variant normalizes each row itself, one dispatch a fused op.
    assert ops.count(FUSED) == 2 and "aten.native_layer_norm.default" not in ops, ops
    (out,) = run_pte(em.to_executorch().buffer, x)
    torch.testing.assert_close(out, block(*x), rtol=1e-4, atol=1e-4)


class NormOnlyLinear(NormLinear):
    """NormLinear with the norm's affine parts as given: both, the weight alone, none."""

    def __init__(self, k, n, affine):
        super().__init__(k, n, act=True)
        self.norm = torch.nn.LayerNorm(k, elementwise_affine=affine != "none", bias=affine == "both")
        if affine != "none":
            with torch.no_grad():
                self.norm.weight.uniform_(-2, 2)
                if affine == "both":
                    self.norm.bias.uniform_(-1, 1)


def test_few_rows_normalize_in_gemv():
    """Rows gemv.glsl takes (up to 64 of them, too few tiles) layer-norm their row of A first in the
    product's own dispatch (its _ln variant): float32 and float16, K not a multiple of 4 or 8, a batch,
    rows far from zero (the variance taken around the mean), the norm with both, one or none of its
    affine parts, gelu in the epilogue."""
    torch.manual_seed(5)
    for dtype, tolerance in ((torch.float32, 1e-4), (torch.float16, 2e-2)):
        for k, n, rows, affine in ((37, 29, (3, 7), "both"), (64, 10, (1, 1), "weight"), (20, 50, (2, 9), "none")):
            model = NormOnlyLinear(k, n, affine).eval().to(dtype)
            x = (torch.randn(*rows, k) * 3 + 1000).to(dtype) if dtype == torch.float32 else \
                (torch.randn(*rows, k) * 3 + 40).to(dtype)
            run = run_forcing(model, (x,))
            suffix = "_f32" if dtype == torch.float32 else "_f16"
            assert run.shaders in (["gemv_ln" + suffix], ["gemv_ln_sg" + suffix]), run.shaders
            ref = model.float()(x.float()) if dtype == torch.float32 else \
                model.linear.float()(model.norm.float()(x.float()).half().float())
            ref = torch.nn.functional.gelu(ref) if dtype == torch.float16 else ref
            torch.testing.assert_close(run.outputs[0].float(), ref, rtol=tolerance, atol=tolerance)


class TwoBlocks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(8)
        self.blocks = torch.nn.Sequential(ViTBlock(48, 3, 96), ViTBlock(48, 3, 96))
        with torch.no_grad():
            for block in self.blocks:
                for norm in (block.norm1, block.norm2):
                    norm.weight.uniform_(-2, 2)
                    norm.bias.uniform_(-1, 1)

    def forward(self, x):
        return self.blocks(x)


class LinearNormLinear(torch.nn.Module):
    """A linear without a residual whose output a norm without affine parts takes to another linear."""

    def __init__(self, k, n, m):
        super().__init__()
        torch.manual_seed(9)
        self.first, self.norm, self.second = torch.nn.Linear(k, n), torch.nn.LayerNorm(n, elementwise_affine=False), \
            torch.nn.Linear(n, m)

    def forward(self, x):
        h = self.first(x)
        return self.second(self.norm(h)), h


def test_float32_norm_folds_into_the_split_k_reduce_before_it():
    """Where the linear's float32 kernel does not normalize A itself (split-K tiled products: forced here;
    ViT-tiny's default on a GPU), the layer norm goes into the split-K reduce that made A, when that reduce is
    the last node: its _ln variant writes the rows normed too (matmul_splitk_reduce.glsl), one dispatch fewer.
    Two ViT blocks: three of the four norms follow a reduce with its residual (the first reads the input:
    the norm's own kernel); a linear without a residual, N = 37 (scalar path), a norm without affine parts,
    rows far from zero, both outputs checked; rows over matmul_splitk_reduce.glsl's 1024 keep the norm's
    kernel."""
    forced = dict(TILED_MM="8,8,8", MM_SPLITK=3)
    model, x = TwoBlocks().eval(), torch.randn(1, 70, 48)
    run = run_forcing(model, (x,), **forced)
    folded = [s for s in run.shaders if s.startswith("matmul_splitk_reduce_res_ln")]
    norms = [s for s in run.shaders if s.startswith("layer_norm")]
    assert len(folded) == 3 and len(norms) == 1, run.shaders
    torch.testing.assert_close(run.outputs[0], model(x), rtol=1e-4, atol=1e-4)
    for n, folds in ((37, True), (1030, False)):
        model, x = LinearNormLinear(24, n, 20).eval(), torch.randn(2, 35, 24) * 3 + 500
        run = run_forcing(model, (x,), **forced)
        assert any(s.startswith("matmul_splitk_reduce_ln") for s in run.shaders) == folds, run.shaders
        assert any(s.startswith("layer_norm") for s in run.shaders) != folds, run.shaders
        for out, ref in zip(run.outputs, model(x)):
            torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-3)
    # Rows resized: the folded norm's output resizes with the reduce's.
    model, rows = LinearNormLinear(24, 40, 20).eval(), torch.export.Dim("rows", min=1, max=70)
    run = run_forcing(model, (torch.randn(70, 24),), dynamic_shapes=({0: rows},), **forced)
    assert any(s.startswith("matmul_splitk_reduce_ln") for s in run.shaders), run.shaders
    for n in (70, 9, 1, 64):
        x = torch.randn(n, 24)
        for out, ref in zip(run.method.execute([x]), model(x)):
            torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)


def _half_run(model, x, **settings):
    model = model.eval().half()
    run = run_forcing(model, (x.half(),), **settings)
    ref = model.float()(x.half().float())
    return run, ref


def test_half_norm_in_the_cooperative_matrix_kernel():
    """90 rows (a partial tile), K = 40 (a partial K step), gelu in the epilogue: one dispatch."""
    torch.manual_seed(1)
    run, ref = _half_run(NormLinear(40, 56, act=True), torch.randn(3, 30, 40) * 4 + 2, **EMULATE)
    assert len(run.shaders) == 1 and run.shaders[0].startswith("matmul_coop_emu_") and "_kb_ln_" in run.shaders[0], \
        run.shaders
    torch.testing.assert_close(run.outputs[0].float(), ref, rtol=2e-2, atol=2e-2)


def test_half_norm_without_cooperative_matrices_runs_the_norm_first():
    """No cooperative matrices (lavapipe without the emulation) or rows of K = 20 (not 8-half aligned): the
    layer norm's kernel, then the product."""
    torch.manual_seed(2)
    for k, settings in ((40, {}), (20, EMULATE)):
        run, ref = _half_run(NormLinear(k, 24), torch.randn(3, 30, k), **settings)
        assert run.shaders[0].startswith("layer_norm") and len(run.shaders) == 2, run.shaders
        assert "_ln_" not in run.shaders[1], run.shaders
        torch.testing.assert_close(run.outputs[0].float(), ref, rtol=2e-2, atol=2e-2)


def test_few_rows_normalize_in_gemv_without_subgroup_ops():
    """gemv_ln's plain twin (its sums a tree through shared memory), where subgroup arithmetic is off."""
    torch.manual_seed(6)
    model, x = NormOnlyLinear(37, 29, "both").eval(), torch.randn(3, 7, 37) * 3 + 1000
    run = run_forcing(model, (x,), NO_SUBGROUP_OPS=True)
    assert run.shaders == ["gemv_ln_f32"], run.shaders
    torch.testing.assert_close(run.outputs[0], model(x), rtol=1e-4, atol=1e-4)


def test_look_alikes_keep_their_ops():
    torch.manual_seed(3)
    x = (torch.randn(2, 5, 16),)
    em = lower(NormLinear(16, 8, reuse=True).eval(), x)
    ops = dispatch_ops(em)
    assert FUSED not in ops and "aten.native_layer_norm.default" in ops, ops


def _op_graph(x, ln_weight, ln_bias, weight, bias, activation, **settings):
    """The op alone in a blob (every tensor an input), so that it also runs where only the runtime's module
    is (the GPU machine): the real cooperative-matrix kernel there."""
    import vkdelegate.runtime as rt
    from vkdelegate.serialization.blob import serialize_graph
    from vkdelegate.serialization.graph_ir import (DType, DoubleValue, GraphIR, NullValue, OpCall, StringValue,
                                                   TensorValue)
    g = GraphIR()
    tensors = [t for t in (x, ln_weight, ln_bias, weight, bias) if t is not None]
    ids = {id(t): g.add_value(TensorValue(DType.float16, tuple(t.shape))) for t in tensors}
    g.input_ids = list(ids.values())
    ref = lambda t: ids[id(t)] if t is not None else g.add_value(NullValue())  # noqa: E731
    out = g.add_value(TensorValue(DType.float16, tuple(x.shape[:-1]) + (weight.shape[0],)))
    args = (ref(x), ref(ln_weight), ref(ln_bias), g.add_value(DoubleValue(1e-5)), ref(weight), ref(bias),
            g.add_value(StringValue(activation)), out)
    g.chain.append(OpCall("et_vk.vkd_ln_linear.default", args))
    g.output_ids = [out]
    return rt.Graph(serialize_graph(g), overrides=settings or None), tensors


def test_the_op_alone_on_this_device():
    """The kernel this device takes (the real cooperative-matrix one on a GPU that has them, else the
    emulated twin) on 197 rows of 192 (ViT-tiny's), a norm without a bias, gelu."""
    from test_sdpa_tiled import coop_kernel
    torch.manual_seed(4)
    x = (torch.randn(1, 197, 192) * 3 + 1).half()
    ln_w, w, b = torch.randn(192).half(), (torch.randn(72, 192) / 14).half(), torch.randn(72).half()
    settings, shader = coop_kernel()
    graph, tensors = _op_graph(x, ln_w, None, w, b, "gelu", **settings)
    shaders = [s for _, s in graph.dispatches()]
    assert len(shaders) == 1 and shaders[0].startswith(shader.replace("sdpa", "matmul")) and "_kb_ln_" in shaders[0], \
        shaders
    (out,) = graph.run([t.numpy() for t in tensors])
    normed = torch.nn.functional.layer_norm(x.float(), (192,), ln_w.float(), None, 1e-5).half().float()
    ref = torch.nn.functional.gelu(torch.nn.functional.linear(normed, w.float(), b.float()))
    torch.testing.assert_close(torch.from_numpy(out).float(), ref, rtol=1e-2, atol=1e-2)
