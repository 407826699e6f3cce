"""The decode kernels of the quantized linears (qlinear_gemv.glsl, qlinear_rows.glsl,
qlinear_dq8a_dot.glsl, qlinear_dq8a_quant.glsl): each variant (int4 / int8, 16-byte chunks
or one word, x as vec4 or checked floats, subgroup or shared-memory reduction, weight-only
one row / weight-only few rows / dq8a plain / dq8a integer dot) is checked to be the one
chosen and against eager PyTorch (the et_vk ops' reference implementations), on odd K, N
not a multiple of the 4 columns a workgroup makes, rows 1..4 and more, with and without
zero points and bias, group sizes 4..256 (words per group a power of two or not) and
per-axis, K long enough for several chunks or steps per invocation (and a last step
part past the row), and rows changing between executes."""
import pytest
import torch

from helpers import TOLERANCES, lower
from kernel_check import assert_ran, chosen_shaders, lower_once, run_forcing
import torchao_samples as S

pytest.importorskip("torchao")

OPS = {"weight_only": "vkd_linear_qw", "dq8a_dot": "vkd_linear_dq8a_qw", "dq8a_plain": "vkd_linear_dq8a_qw"}

# (id, K, N, bits, group size (None: per axis), zero points, bias, input sizes)
CASES = [
    ("int4_vec4_g32_asym_bias_m1", 256, 13, 4, 32, True, True, (1, 256)),
    ("int4_vec4_axis_m2", 128, 8, 4, None, False, False, (2, 128)),
    ("int4_vec4_g64_m3", 192, 6, 4, 64, True, True, (3, 192)),
    ("int4_vec4_g16_m4", 64, 11, 4, 16, False, True, (4, 64)),
    ("int4_vec4_g256_long_k", 4096, 5, 4, 256, True, False, (1, 4096)),
    ("int4_word_g24_k72_m1", 72, 9, 4, 24, True, True, (1, 72)),
    ("int4_word_axis_odd_k45_m3", 45, 7, 4, None, False, True, (3, 45)),
    ("int8_vec4_g32_m2", 96, 13, 8, 32, False, True, (2, 96)),
    ("int8_vec4_g4_asym_m1", 64, 3, 8, 4, True, False, (1, 64)),
    ("int8_vec4_g128_long_k", 2048, 6, 8, 128, True, True, (1, 2048)),
    ("int8_word_axis_odd_k37_m4", 37, 13, 8, None, True, True, (4, 37)),
    ("int8_word_g20_k40_rank3", 40, 5, 8, 20, False, False, (1, 1, 40)),
    ("int4_vec4_g32_m6", 128, 10, 4, 32, True, True, (2, 3, 128)),
    ("int8_word_axis_m9", 36, 7, 8, None, False, True, (9, 36)),
    ("int4_word_axis_odd_k45_m1", 45, 7, 4, None, True, True, (1, 45)),
    ("int8_word_axis_odd_k38_m1", 38, 6, 8, None, True, False, (1, 38)),
    ("int4_vec4_axis_k4104_m1", 4104, 6, 4, None, True, False, (1, 4104)),
]


def fused(op_name, k, n, bits, group, asym, bias):
    torch.manual_seed(k * 31 + n)
    group = k if group is None else group
    packed, scales, zeros = S.random_quantized_weight(n, k, bits, group, asym)
    b = torch.randn(n) if bias else None
    return S.FusedCall(getattr(torch.ops.et_vk, op_name).default, packed, scales, zeros, b, bits, group)


def expected_shader(flow, k, bits, sg, rows=2):
    if flow == "weight_only" and rows == 1:
        return f"qlinear_gemv_b{bits}" + ("_x4" if k % 4 == 0 and k % (32 // bits) == 0 else "")
    base = {"weight_only": "qlinear_rows", "dq8a_dot": "qlinear_dq8a_dot", "dq8a_plain": "qlinear_dq8a_rows"}[flow]
    vec4 = k % (4 * 32 // bits) == 0
    return base + f"_b{bits}" + ("_vec4" if vec4 else "") + ("_sg" if sg else "")


def settings_for(flow, sg):
    """The graph settings that select `flow`'s kernel with (sg) or without subgroup
    reductions (the subgroupAdd reduction is taken only when asked: slower on the H100)."""
    return dict(NO_INTEGER_DOT=flow == "dq8a_plain", QLINEAR_SUBGROUP=sg, NO_SUBGROUP_OPS=not sg)


@pytest.mark.parametrize("sg", [True, False], ids=["subgroup", "shared"])
@pytest.mark.parametrize("flow", list(OPS))
@pytest.mark.parametrize("case", [pytest.param(c, id=c[0], marks=pytest.mark.xdist_group(f"qlinear_rows-{c[0]}"))
                                  for c in CASES])
def test_rows_kernel_matches_reference(case, flow, sg):
    _, k, n, bits, group, asym, bias, sizes = case
    module = fused(OPS[flow], k, n, bits, group, asym, bias)
    x = torch.randn(sizes) * 2.0
    em = lower_once(("qlinear_rows", case[0], OPS[flow]), module, (x,))  # the same lowering for every setting
    run = run_forcing(module, (x,), edge_manager=em, **settings_for(flow, sg))
    shaders = run.shaders
    rows = x.numel() // k
    if flow != "weight_only" or rows <= 4:
        assert_ran(shaders, expected_shader(flow, k, bits, sg, rows))
    if flow != "weight_only":
        assert_ran(shaders, "qlinear_dq8a_quant_sg" if sg else "qlinear_dq8a_quant")
    out = run.outputs[0]
    with torch.no_grad():
        torch.testing.assert_close(out, module(x), **TOLERANCES["matmul"])


@pytest.mark.parametrize("flow", list(OPS))
@pytest.mark.parametrize("k, bits", [(256, 4), (45, 4), (96, 8), (37, 8)])
def test_rows_change_between_executes(flow, k, bits):
    """One loaded program, rows 1..6: the weight-only op moves between the rows and the
    tiled kernel, the dq8a scratch rows follow the current count."""
    module = fused(OPS[flow], k, 11, bits, None if k % 32 else 32, True, True)
    rows = torch.export.Dim("rows", min=1, max=6)
    run = run_forcing(module, (torch.randn(6, k),), dynamic_shapes=({0: rows},), **settings_for(flow, True))
    method = run.method
    for m in (4, 1, 6, 3, 2, 5, 1):
        x = torch.randn(m, k) * 3.0
        with torch.no_grad():
            torch.testing.assert_close(method.execute([x])[0], module(x), **TOLERANCES["matmul"])


@pytest.mark.parametrize("size", [16, 256])
@pytest.mark.parametrize("flow", ["weight_only", "dq8a_dot"])
def test_local_size_setting(size, flow):
    module = fused(OPS[flow], 4096, 9, 4, 32, True, True)
    x = torch.randn(3, 4096)
    out = run_forcing(module, (x,), QLINEAR_WG=size).outputs[0]
    with torch.no_grad():
        torch.testing.assert_close(out, module(x), **TOLERANCES["matmul"])


def test_bad_local_size_is_an_error():
    module = fused("vkd_linear_qw", 64, 5, 4, 32, False, False)
    em = lower(module, (torch.randn(1, 64),))
    with pytest.raises(ValueError, match="VKDELEGATE_QLINEAR_WG=48 is not a power of two"):
        chosen_shaders(em, QLINEAR_WG=48)
    with pytest.raises(ValueError, match="VKDELEGATE_QLINEAR_WG=8: expected an integer from 16 to 1024"):
        chosen_shaders(em, QLINEAR_WG=8)


@pytest.mark.parametrize("flow", list(OPS))
def test_default_rows_kernel_reduces_through_shared_memory(flow):
    """Without the setting QLINEAR_SUBGROUP the rows kernel is the shared-memory
    reduction (faster on the H100), at 64 invocations (weight-only, one row: qlinear_gemv.glsl,
    which reduces in shared memory too); the dq8a quantize node keeps its subgroup variant
    where the device has subgroup arithmetic."""
    module = fused(OPS[flow], 4096, 8, 4, 32, False, False)
    x = torch.randn(1, 4096)
    run = run_forcing(module, (x,), NO_INTEGER_DOT=flow == "dq8a_plain")
    shaders = run.shaders
    assert_ran(shaders, expected_shader(flow, 4096, 4, False, rows=1))
    assert not any(s.startswith(("qlinear_rows", "qlinear_dq8a_dot", "qlinear_dq8a_rows")) and s.endswith("_sg")
                   for s in shaders), shaders
    out = run.outputs[0]
    with torch.no_grad():
        torch.testing.assert_close(out, module(x), **TOLERANCES["matmul"])


@pytest.mark.parametrize("rows", [1, 3])
def test_setting_keeps_one_row_on_rows_kernel(rows):
    """QLINEAR_NO_GEMV: one row takes qlinear_rows.glsl (to compare), not qlinear_gemv.glsl."""
    module = fused("vkd_linear_qw", 256, 13, 4, 32, True, True)
    x = torch.randn(rows, 256)
    run = run_forcing(module, (x,), QLINEAR_NO_GEMV=True)
    assert_ran(run.shaders, "qlinear_rows_b4_vec4")
    assert not any(s.startswith("qlinear_gemv") for s in run.shaders), run.shaders
    with torch.no_grad():
        torch.testing.assert_close(run.outputs[0], module(x), **TOLERANCES["matmul"])


def test_gemv_shapes_match_reference():
    """Each shape of qlinear_gemv.glsl that QLINEAR_GEMV_SHAPE picks (columns per workgroup,
    words per invocation and step), with zero points, bias, N not a multiple of 8 and a last
    step part past the row."""
    module = fused("vkd_linear_qw", 1056, 13, 4, 32, True, True)
    x = torch.randn(1, 1056) * 2.0
    em = lower_once(("qlinear_gemv_shapes",), module, (x,))
    for shape in ("c4u1", "c2u1", "c4u2", "c8u1", "c4u1s"):
        run = run_forcing(module, (x,), edge_manager=em, QLINEAR_GEMV_SHAPE=shape, QLINEAR_WG=16)
        assert_ran(run.shaders, "qlinear_gemv_b4_x4" + ("" if shape == "c4u1" else "_" + shape))
        with torch.no_grad():
            torch.testing.assert_close(run.outputs[0], module(x), **TOLERANCES["matmul"])
