"""backends/linear_act_fusion.py: a float linear whose only user is a relu or a gelu becomes one
et_vk.vkd_linear_act dispatch (the activation applied as the product is stored); a linear with
other users keeps its own activation; a residual add after the linear or its activation (alpha 1, the
output's sizes and dtype) goes into the same dispatch, on every float kernel a linear can take;
results match eager in float32 and under force_fp16 (the cooperative-matrix kernels, their emulated
twins on lavapipe)."""
import pytest
import torch

from helpers import TOLERANCES, dispatch_ops, lower, run_pte
from kernel_check import chosen_shaders, lower_once, run_forcing
import vkdelegate.runtime as rt
from vkdelegate.examples.models import MODELS


class TwoUsers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 24)

    def forward(self, x):
        y = self.fc(x)
        return torch.nn.functional.gelu(y, approximate="tanh"), y * 2.0


def test_mlp_relus_go_into_the_linears():
    model, inputs = MODELS["mlp"]()
    em = lower(model, inputs)
    ops = dispatch_ops(em)
    assert not any("relu" in op for op in ops), ops
    assert sum("vkd_linear_act" in op for op in ops) == 2, ops
    torch.testing.assert_close(run_pte(em.to_executorch().buffer, inputs)[0], model(*inputs), rtol=1e-5, atol=1e-5)


def test_a_linear_with_other_users_keeps_its_activation():
    torch.manual_seed(0)
    model, x = TwoUsers().eval(), torch.randn(5, 16)
    em = lower(model, (x,))
    ops = dispatch_ops(em)
    assert not any("vkd_linear_act" in op for op in ops) and any("gelu" in op for op in ops), ops
    for ours, ref in zip(run_pte(em.to_executorch().buffer, (x,)), model(x)):
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5)


def test_fp16_through_the_cooperative_matrix_kernels():
    """force_fp16 linears of many rows take the cooperative-matrix kernel (its emulated twin here),
    which applies the activation in its epilogue too: one dispatch, the same result."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU()).eval()
    x = torch.randn(200, 64)
    em = lower(model, (x,), options={"force_fp16": True})
    settings = {"COOPMAT_EMULATE": "1"}
    with rt.overrides(**settings):
        out = run_pte(em.to_executorch().buffer, (x,))[0]
    shaders = chosen_shaders(em, **settings)
    # The product with its gelu, then force_fp16's exit cast (102 KiB, over HOST_CASTS_KB; the 51 KiB input's
    # entry cast is the host's).
    assert len(shaders) == 2 and "coop" in shaders[0] and shaders[1].startswith("convert_f16_to_f32") and \
        not any("unary" in s for s in shaders), shaders
    torch.testing.assert_close(out.float(), model(x), rtol=2e-2, atol=2e-2)


# ---- the residual add after a linear [and its activation]: x + act(linear(...)) in the epilogue

class LinearResidual(torch.nn.Module):
    """residual + act(fc(x)) (or act(fc(x)) + residual), the residual a second input; alpha != 1: an add
    that scales the linear's output."""

    def __init__(self, k, n, act=None, bias=True, alpha=1, residual_first=True):
        super().__init__()
        self.fc, self.act, self.alpha, self.residual_first = torch.nn.Linear(k, n, bias=bias), act, alpha, residual_first

    def forward(self, x, residual):
        y = self.fc(x)
        if self.act is not None:
            y = self.act(y)
        if self.alpha != 1:
            return torch.add(residual, y, alpha=self.alpha)
        return residual + y if self.residual_first else y + residual


def _gelu_tanh(y):
    return torch.nn.functional.gelu(y, approximate="tanh")


# (id, dtype, rows, N, activation, bias, settings, the shaders that must run): each float kernel a
# linear can take, forced where the sizes alone would not take it; N 40 keeps the 16-byte stores (N a
# multiple of 4, of 8 for the cooperative-matrix kernels), N 37 takes the scalar ones. fp16 compares
# with tolerance (one rounding on store here, two in eager: the linear's and the add's).
KERNEL_PATHS = [
    ("gemv_f32", torch.float32, 1, 40, torch.relu, True, {}, ["gemv_res_f32"]),
    ("matmul_f32", torch.float32, 37, 40, None, False, dict(NO_TILED_MM=True, GEMV_MAX_ROWS=1), ["matmul_res_f32"]),
    ("tiled_f32", torch.float32, 37, 40, torch.nn.functional.gelu, True, dict(TILED_MM="8,8,8", MM_SPLITK=1),
     ["matmul_tiledu_kb_res_f32"]),
    ("tiled_no_bias_silu_f32", torch.float32, 37, 40, torch.nn.functional.silu, False, dict(TILED_MM="8,8,8", MM_SPLITK=1),
     ["matmul_tiledu_kb_res_f32"]),
    ("splitk_f32", torch.float32, 37, 40, _gelu_tanh, True, dict(TILED_MM="8,8,8", MM_SPLITK=3),
     ["matmul_tiledu_sk_kb_f32", "matmul_splitk_reduce_res_f32"]),
    ("gemv_f16", torch.float16, 1, 37, None, True, {}, ["gemv_res_f16"]),
    ("matmul_f16", torch.float16, 37, 40, torch.relu, True, dict(NO_COOPMAT=True, GEMV_MAX_ROWS=1),
     ["matmul_res_f16"]),
    ("coop_m_f16", torch.float16, 37, 40, torch.nn.functional.gelu, True, dict(COOPMAT_EMULATE=True, COOPMM_TILE="m"),
     ["matmul_coop_emu_m_kb_res_f16"]),
    ("coop_m_n37_f16", torch.float16, 37, 37, None, True, dict(COOPMAT_EMULATE=True, COOPMM_TILE="m"),
     ["matmul_coop_emu_m_kb_res_f16"]),
    ("coop_mk2_silu_f16", torch.float16, 37, 40, torch.nn.functional.silu, False, dict(COOPMAT_EMULATE=True, COOPMM_TILE="mk2"),
     ["matmul_coop_emu_mk2_kb_res_f16"]),
]


@pytest.mark.parametrize("case", KERNEL_PATHS, ids=[c[0] for c in KERNEL_PATHS])
def test_residual_in_each_kernels_epilogue(case):
    """The add fuses (one dispatch, the _res variant of the kernel) and matches eager."""
    _, dtype, rows, n, act, bias, settings, shaders = case
    torch.manual_seed(0)
    model = LinearResidual(40, n, act, bias).to(dtype).eval()
    inputs = (torch.randn(rows, 40, dtype=dtype), torch.randn(rows, n, dtype=dtype))
    run = run_forcing(model, inputs, **settings)
    assert run.shaders == shaders, run.shaders
    with torch.no_grad():
        ref = model.float()(*(t.float() for t in inputs))
    tol = TOLERANCES["fp16_matmul" if dtype == torch.float16 else "matmul"]
    torch.testing.assert_close(run.outputs[0].float(), ref, **tol)


@pytest.mark.parametrize("settings", [{}, dict(NO_TILED_MM=True), dict(TILED_MM="8,8,8", MM_SPLITK=1),
                                      dict(TILED_MM="8,8,8", MM_SPLITK=2)],
                         ids=["default", "matmul", "tiled", "splitk"])
def test_residual_unaligned_sizes_and_rank3(settings):
    """Odd K and N (scalar loads and stores), a rank-3 input, the residual as the first operand or the
    second, the linear's own input as the residual (x + fc(x))."""
    torch.manual_seed(1)

    class SelfResidual(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(13, 13), torch.nn.Linear(13, 13, bias=False)

        def forward(self, x):
            return torch.relu(self.fc2(x + self.fc1(x))) + x

    for key, model, inputs in (("rank3", LinearResidual(13, 37, torch.relu, residual_first=False),
                                (torch.randn(3, 11, 13), torch.randn(3, 11, 37))),
                               ("self", SelfResidual(), (torch.randn(2, 9, 13),))):
        em = lower_once(("residual_unaligned", key), model.eval(), inputs)  # one lowering for every setting
        run = run_forcing(model, inputs, edge_manager=em, **settings)
        ops = dispatch_ops(run.edge_manager)
        linears = sum("vkd_linear_act" in op for op in ops)
        assert linears == len(ops) and sum("_res_" in s for s in run.shaders) == linears, (ops, run.shaders)
        torch.testing.assert_close(run.outputs[0], model(*inputs), **TOLERANCES["matmul"])


def test_residual_resizes_with_the_output():
    """A dynamic row count: the residual's sizes follow the output's at every execute."""
    rows = torch.export.Dim("rows", min=1, max=64)
    torch.manual_seed(2)
    model = LinearResidual(24, 20, torch.nn.functional.gelu).eval()
    inputs = (torch.randn(64, 24), torch.randn(64, 20))
    run = run_forcing(model, inputs, dynamic_shapes=({0: rows}, {0: rows}))
    assert len(run.shaders) == 1 and "_res_" in run.shaders[0], run.shaders
    for m in (64, 1, 17):
        x = (torch.randn(m, 24), torch.randn(m, 20))
        torch.testing.assert_close(run.method.execute(list(x))[0], model(*x), **TOLERANCES["matmul"])


class NotFused(torch.nn.Module):
    """Adds after linears that must stay adds: a broadcast residual, a linear output with two users,
    alpha 2 (left unfused: the kernels add the residual unscaled)."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = torch.nn.Linear(8, 6), torch.nn.Linear(8, 6), torch.nn.Linear(8, 6)

    def forward(self, x, row, other):
        broadcast = self.a(x) + row                    # row: [6], broadcast over the rows
        y = self.b(x)
        twice = (y + other) * y                        # y has two users
        scaled = torch.add(other, self.c(x), alpha=2.0)
        return broadcast, twice, scaled


def test_adds_that_must_not_fuse():
    torch.manual_seed(3)
    model = NotFused().eval()
    inputs = (torch.randn(5, 8), torch.randn(6), torch.randn(5, 6))
    em = lower(model, inputs)
    ops = dispatch_ops(em)
    assert ops.count("aten.linear.default") == 3 and not any("vkd_linear_act" in op for op in ops), ops
    assert ops.count("aten.add.Tensor") == 3, ops
    for ours, ref in zip(run_pte(em.to_executorch().buffer, inputs), model(*inputs)):
        torch.testing.assert_close(ours, ref, **TOLERANCES["matmul"])


def _adds(ops):
    return sum(op == "aten.add.Tensor" for op in ops)


def test_transformer_block_residual_adds_go_into_the_linears():
    """The two residual adds of a pre-norm block (after the output projection and fc2) fuse: proj and fc2
    with their adds are two vkd_linear_act dispatches, no add left; fc1 with its gelu goes into the
    norm before it (et_vk.vkd_ln_linear, test_ln_linear.py)."""
    model, inputs = MODELS["transformer_block"]()
    em = lower(model, inputs)
    ops = dispatch_ops(em)
    assert _adds(ops) == 0 and sum("vkd_linear_act" in op for op in ops) == 2, ops
    torch.testing.assert_close(run_pte(em.to_executorch().buffer, inputs)[0], model(*inputs), **TOLERANCES["model"])


def test_vit_blocks_residual_adds_go_into_the_linears():
    """A small ViT (two blocks of ViTTiny's layout): each block's two residual adds fuse (proj and fc2;
    fc1 with its gelu goes into the norm before it); the one add left is the position embedding's
    (after a cat, not a linear)."""
    from vkdelegate.examples.models import ViTTiny
    model = ViTTiny(image_size=32, depth=2).eval()
    inputs = ViTTiny.example_inputs(image_size=32)
    em = lower(model, inputs)
    ops = dispatch_ops(em)
    assert _adds(ops) == 1 and sum("vkd_linear_act" in op for op in ops) == 2 * 2, ops
    torch.testing.assert_close(run_pte(em.to_executorch().buffer, inputs)[0], model(*inputs), **TOLERANCES["model"])


def test_fp16_transformer_block_through_the_cooperative_matrix_kernels():
    """force_fp16: the fused linears take the cooperative-matrix kernels' residual and layer-norm variants
    (emulated here) and match eager within half precision."""
    model, inputs = MODELS["transformer_block"]()
    em = lower(model, inputs, options={"force_fp16": True})
    settings = {"COOPMAT_EMULATE": "1", "GEMV_MAX_ROWS": "1"}  # 34 rows would take gemv.glsl
    with rt.overrides(**settings):
        out = run_pte(em.to_executorch().buffer, inputs)[0]
    shaders = chosen_shaders(em, **settings)
    assert sum(s.startswith("matmul_coop_emu_") and "_kb_res_" in s for s in shaders) == 2, shaders
    # the two layer norms in the qkv projection's and fc1's fetch (et_vk.vkd_ln_linear)
    assert sum(s.startswith("matmul_coop_emu_") and "_kb_ln_" in s for s in shaders) == 2, shaders
    assert not any(s.startswith("layer_norm") for s in shaders), shaders
    torch.testing.assert_close(out.float(), model(*inputs), rtol=3e-2, atol=3e-2)
