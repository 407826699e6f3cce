"""The weight-only quantized linear on cooperative matrices (glsl/qlinear_coop.glslh),
for many rows (prefill). Lavapipe has no cooperative matrices, so these run its
emulated twin (COOPMAT_EMULATE: the same tiling, staging and dequantization, the
matrix operations as loops), the tiles that fit lavapipe forced in turn, against
eager PyTorch on the dequantized weight: rows that leave ragged tiles (33, 64, 129),
N odd and past one tile (37, 250), K of a few groups (group sizes 32, 128, 4 and
per-axis) and ragged K (not a multiple of 8 or of 4), int4 and int8, with and without
zero points and bias. The path rounds x and the dequantized weight to float16: its
tolerance is that of one half rounding per operand, and the float32 kernel
(qlinear_tiled.glsl) on the same case meets the float32 one."""
import pytest
import torch

import vkdelegate.runtime as rt
from helpers import TOLERANCES, relative_error
from kernel_check import assert_ran, chosen_shaders, lower_once, run_forcing, variant_table
import torchao_samples as S

pytest.importorskip("torchao")

# Two half roundings (x, weight) per product, 4.9e-4 relative each, summed in float:
# about 7e-4 relative to the output's norm for random signs. A wrong index gives O(1).
RTOL = 2e-3
# Every kernel of the op is recorded and each execute dispatches the one for its rows,
# so the loaded shaders do not say which ran; the rounding does: float32 kernels stay
# far below this relative error, the half path far above.
HALF_ROUNDING_SEEN = 2e-5


def assert_half_path(out, ref):
    assert HALF_ROUNDING_SEEN < relative_error(out, ref) <= RTOL


def assert_float32_path(out, ref):
    assert relative_error(out, ref) < HALF_ROUNDING_SEEN
    torch.testing.assert_close(out, ref, **TOLERANCES["matmul"])

# (id, K, N, bits, group size (None: per axis), zero points, bias, input sizes, tile forced:
# each tile that fits lavapipe's 32 KiB with both bit widths)
CASES = [
    ("int4_g32_asym_bias_m33", 128, 37, 4, 32, True, True, (33, 128), "h"),
    ("int4_g128_m64_n250", 256, 250, 4, 128, False, False, (64, 256), "l1"),
    ("int8_g32_bias_m129", 96, 37, 8, 32, False, True, (129, 96), "m"),
    ("int8_g128_asym_rank3", 256, 40, 8, 128, True, False, (2, 33, 256), "h"),
    ("int8_g4_asym_k44_m40", 44, 19, 8, 4, True, True, (40, 44), "l1"),  # K % 8 = 4: a half chunk
    ("int4_axis_k45_m33", 45, 37, 4, None, True, True, (33, 45), "m"),   # K % 4 != 0: scalar x loads
]

TILES = variant_table("coopmm_variants")


def shared_bytes(name):
    v = TILES.VARIANTS[name]
    bm, bn, bk = v["wm"] * v["fm"] * 16, v["wn"] * v["fn"] * 16, v["bk"]
    return 16 * v["stages"] * (bm + bn) * (bk // 8 + 1)


def fused(k, n, bits, group, asym, bias):
    torch.manual_seed(k * 31 + n)
    group = k if group is None else group
    packed, scales, zeros = S.random_quantized_weight(n, k, bits, group, asym)
    b = torch.randn(n) if bias else None
    return S.FusedCall(torch.ops.et_vk.vkd_linear_qw.default, packed, scales, zeros, b, bits, group)


def run_case(case, **settings):
    _, k, n, bits, group, asym, bias, sizes, _ = case
    module = fused(k, n, bits, group, asym, bias)
    torch.manual_seed(7)
    x = torch.randn(sizes) * 2.0
    em = lower_once(("qlinear_coop", case[0]), module, (x,))
    run = run_forcing(module, (x,), edge_manager=em, **settings)
    with torch.no_grad():
        ref = module(x)
    return run, ref


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c[0]}-{c[-1]}",
                                               marks=pytest.mark.xdist_group(f"qlinear_coop-{c[0]}"))
                                  for c in CASES])
def test_emulated_coop_kernel_matches_eager(case):
    tile = case[-1]
    smem = rt.device_info()["max_shared_memory"]
    if shared_bytes(tile) > smem:
        pytest.skip(f"tile {tile} needs more shared memory than this device's {smem} bytes")
    run, ref = run_case(case, COOPMAT_EMULATE=True, QLINEAR_COOP_TILE=tile)
    assert_ran(run, f"qlinear_coop_emu_{tile}_b{case[3]}")
    out = run.outputs[0]
    assert out.shape == ref.shape
    assert_half_path(out, ref)
    torch.testing.assert_close(out, ref, rtol=1e-2, atol=1e-2 * ref.abs().max().item())


def test_choice_by_rows_and_switches():
    """The default tile on this device; fewer rows than QLINEAR_COOP_MIN_ROWS, no
    emulation on a device without the matrices, or QLINEAR_NO_COOPMAT keep the float32
    tiled kernel, which meets float32 tolerances where the half path could not."""
    case = CASES[0]
    run, ref = run_case(case, COOPMAT_EMULATE=True)
    assert_ran(run, "qlinear_coop_emu_m_b4")  # one 128 x 128 tile: too few for the GPU
    assert_half_path(run.outputs[0], ref)

    for settings in (dict(COOPMAT_EMULATE=True, QLINEAR_NO_COOPMAT=True),
                     dict(COOPMAT_EMULATE=True, QLINEAR_COOP_MIN_ROWS=34),
                     dict(COOPMAT_EMULATE=False)):
        run, ref = run_case(case, **settings)
        native = rt.device_info()["cooperative_matrix"] and rt.device_info()["subgroup_size"] == 32
        if settings == dict(COOPMAT_EMULATE=False) and native:
            assert_ran(run, "qlinear_coop_m_b4")
            assert_half_path(run.outputs[0], ref)
            continue
        if settings != dict(COOPMAT_EMULATE=True, QLINEAR_COOP_MIN_ROWS=34):
            assert not any("coop" in s for s in run.shaders), (settings, run.shaders)
        assert "qlinear_tiled" in run.shaders
        assert_float32_path(run.outputs[0], ref)


@pytest.mark.parametrize("rows, n, tiles", [(4096, 8192, ("l64", "l1")), (2048, 4096, ("h",)), (512, 5632, ("m",))])
def test_tile_by_workgroups(rows, n, tiles):
    """Loaded, not run: 2048 tiles of 128 x 128 take l64 (l1 where its shared memory does
    not fit: lavapipe's 32 KiB); 1024 tiles of 128 x 64 h; a 512-token prompt's widest
    linear (352 tiles of 128 x 64) m."""
    module = fused(64, n, 4, 32, False, False)
    em = lower_once(("qlinear_coop", rows, n), module, (torch.randn(rows, 64),))
    smem = rt.device_info()["max_shared_memory"]
    tile = next(t for t in tiles if shared_bytes(t) <= smem)
    assert f"qlinear_coop_emu_{tile}_b4" in chosen_shaders(em, COOPMAT_EMULATE=True)
    assert "qlinear_coop_emu_m_b4" in chosen_shaders(em, COOPMAT_EMULATE=True, QLINEAR_COOP_TILE="m")


def test_rows_change_between_executes():
    """One loaded program, rows 1..129: the coop kernel from 32 rows, the gemv, rows
    and tiled kernels below, each execute dispatching the one for its rows."""
    module = fused(96, 37, 4, 32, True, True)
    rows = torch.export.Dim("rows", min=1, max=129)
    run = run_forcing(module, (torch.randn(129, 96),), dynamic_shapes=({0: rows},), COOPMAT_EMULATE=True)
    assert any(s.startswith("qlinear_coop_emu_") for s in run.shaders), run.shaders
    for m in (129, 1, 40, 3, 31, 32, 64):
        torch.manual_seed(m)
        x = torch.randn(m, 96) * 2.0
        out = run.method.execute([x])[0]
        with torch.no_grad():
            ref = module(x)
        if m >= 32:
            assert_half_path(out, ref)
        else:
            assert_float32_path(out, ref)

