"""The cooperative-matrix implicit-GEMM convolution for float16
(glsl/conv2d_coop.glslh). Lavapipe has no cooperative matrices, so these run its
emulated twin (the setting COOPMAT_EMULATE: the same indexing, the matrix
operations as loops), each tile variant forced in turn, on shapes that hit every
edge: channels and pixels not multiples of 16, K over several stages, stride,
padding, dilation, groups, batch > 1, 1x1 (the pointwise path), 1-D, and the
fused epilogue (bias, residual, clamp)."""
import copy

import pytest
import torch
from helpers import cpu_ops, delegate_calls, lower, relative_error
from kernel_check import assert_ran, chosen_shaders, lower_once, run_forcing, variant_table
from torch import nn
from op_samples import ConvClamp

inf = float("inf")
TABLE = variant_table("conv_variants")

# One half rounding of the output is 4.9e-4 relative to its own magnitude; the
# sums are float. A wrong index gives O(1) errors.
RTOL = 2e-3


def _x(*shape, scale=1.0):
    torch.manual_seed(7)
    return torch.randn(*shape) * scale


CASES = {
    "3x3_pad1_batch2_odd_channels": (lambda: nn.Conv2d(13, 37, 3, padding=1), lambda: (_x(2, 13, 9, 11),)),
    "stride2_dilation2_asym_no_bias": (lambda: nn.Conv2d(8, 67, (3, 5), stride=2, padding=(2, 1), dilation=(2, 1),
                                                         bias=False), lambda: (_x(1, 8, 13, 11),)),
    "pointwise_groups2_batch3": (lambda: nn.Conv2d(34, 40, 1, groups=2), lambda: (_x(3, 34, 9, 7),)),
    "pointwise_stride2": (lambda: nn.Conv2d(20, 17, 1, stride=2), lambda: (_x(1, 20, 9, 9),)),
    "deep_k_several_stages": (lambda: nn.Conv2d(70, 36, 3, padding=1), lambda: (_x(1, 70, 5, 6),)),
    "many_tiles_1x1": (lambda: nn.Conv2d(16, 80, 1), lambda: (_x(2, 16, 11, 13),)),
    "conv1d": (lambda: nn.Conv1d(5, 20, 5, padding=2), lambda: (_x(2, 5, 33),)),
    "clamp_relu6": (lambda: ConvClamp(nn.Conv2d(20, 33, 3, stride=2, padding=1), 0.0, 6.0),
                    lambda: (_x(1, 20, 13, 9, scale=4.0),)),
    "residual_relu": (lambda: ConvClamp(nn.Conv2d(16, 17, 3, padding=1), 0.0, inf),
                      lambda: (_x(2, 16, 9, 7), _x(2, 17, 9, 7))),
    "residual_no_bound_no_bias": (lambda: ConvClamp(nn.Conv2d(24, 48, 3, padding=1, bias=False), -inf, inf),
                                  lambda: (_x(1, 24, 7, 7), _x(1, 48, 7, 7))),
}


def _run_half(name, **settings):
    """(output, float reference on the half values, shaders that ran)"""
    torch.manual_seed(0)
    module = CASES[name][0]().eval()
    inputs = CASES[name][1]()
    half, half_inputs = copy.deepcopy(module).half(), tuple(x.half() for x in inputs)
    em = lower_once(("coopconv", name), half, half_inputs)  # the same lowering for every setting
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    run = run_forcing(half, half_inputs, edge_manager=em, **settings)
    with torch.no_grad():  # float math on the half-rounded weights and inputs
        ref = copy.deepcopy(half).float()(*(x.float() for x in half_inputs))
    return run.outputs[0], ref, run.shaders


def _grouped(names):
    return [pytest.param(name, marks=pytest.mark.xdist_group(f"coopconv-{name}")) for name in names]


@pytest.mark.parametrize("tile", list(TABLE.COOP))
@pytest.mark.parametrize("name", _grouped(sorted(CASES)))
def test_emulated_coop_conv_matches_eager(name, tile):
    out, ref, shaders = _run_half(name, COOPMAT_EMULATE=True, COOPCONV_TILE=tile)
    assert any(s.startswith(f"conv2d_coop_emu_{tile}_") for s in shaders), shaders
    assert out.dtype == torch.float16 and out.shape == ref.shape
    assert relative_error(out.float(), ref) <= RTOL


def test_emulated_kernel_is_the_one_that_runs():
    """The emulated kernel sums in another order than the float GEMM kernel: some
    half-rounded output differs, so the setting did pick it."""
    name = "deep_k_several_stages"
    emulated, _, _ = _run_half(name, COOPMAT_EMULATE=True)
    fallback, _, shaders = _run_half(name, COOPMAT_EMULATE=False)
    assert not any("coop" in s for s in shaders), shaders
    assert not torch.equal(emulated, fallback)


# Split-K over workgroups (the _sk variants + conv2d_splitk_reduce): every tile
# variant with K cut into slices, on cases where a slice boundary falls inside a
# stage's (ic, kh, kw) decoding, K does not divide evenly, and the epilogue
# (bias, residual, clamp) moves to the reduce pass.
SPLIT_CASES = ["deep_k_several_stages", "residual_relu", "clamp_relu6", "pointwise_groups2_batch3",
               "conv1d", "residual_no_bound_no_bias", "stride2_dilation2_asym_no_bias"]


@pytest.mark.parametrize("splits", [2, 3, 16])
@pytest.mark.parametrize("tile", list(TABLE.COOP))
@pytest.mark.parametrize("name", _grouped(SPLIT_CASES))
def test_emulated_coop_conv_split_k_matches_eager(name, tile, splits):
    out, ref, shaders = _run_half(name, COOPMAT_EMULATE=True, COOPCONV_TILE=tile, COOPCONV_SPLITK=splits)
    K = {"deep_k_several_stages": 70 * 9, "residual_relu": 16 * 9, "clamp_relu6": 20 * 9,
         "pointwise_groups2_batch3": 17, "conv1d": 5 * 5, "residual_no_bound_no_bias": 24 * 9,
         "stride2_dilation2_asym_no_bias": 8 * 15}[name]
    kc = TABLE.coop_kc(tile)
    if -(-K // kc) > 1:  # more than one stage: the forced split (at most one slice per stage) is taken
        assert_ran(shaders, f"conv2d_coop_emu_{tile}_sk_f16", "conv2d_splitk_reduce_f16")
    else:
        assert_ran(shaders, f"conv2d_coop_emu_{tile}_f16")
    assert out.dtype == torch.float16 and out.shape == ref.shape
    assert relative_error(out.float(), ref) <= RTOL


def test_split_k_is_the_default_for_few_tiles_and_long_k():
    """A deep layer at batch 1 (few 16x16 tiles, K over many stages) splits K by default;
    one with many tiles does not."""
    deep = nn.Conv2d(128, 32, 3, padding=1).eval().half()  # 4 tiles of s; K = 1152: 9 stages
    x = _x(1, 128, 5, 5).half()
    assert "conv2d_splitk_reduce_f16" in chosen_shaders(lower(deep, (x,)), COOPMAT_EMULATE=True)
    wide = nn.Conv2d(8, 64, 1).eval().half()  # K = 8: one stage
    assert "conv2d_splitk_reduce_f16" not in chosen_shaders(lower(wide, (_x(1, 8, 40, 40).half(),)),
                                                            COOPMAT_EMULATE=True)


def test_split_k_resizes_in_one_loaded_program():
    """A dynamic batch and image: slices, scratch and reduce follow every size."""
    module = ConvClamp(nn.Conv2d(40, 24, 3, padding=1), 0.0, 6.0).eval().half()
    batch, height = torch.export.Dim("batch", min=1, max=3), torch.export.Dim("height", min=2, max=9)
    inputs = (_x(3, 40, 9, 7, scale=3.0).half(), _x(3, 24, 9, 7).half())
    em = lower(module, inputs, dynamic_shapes=({0: batch, 2: height}, {0: batch, 2: height}))
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    run = run_forcing(module, inputs, edge_manager=em, COOPMAT_EMULATE=True, COOPCONV_SPLITK=3)
    assert_ran(run, "conv2d_splitk_reduce_f16")
    method = run.method
    for n, h in ((3, 9), (1, 4), (2, 9), (1, 2), (3, 9)):
        torch.manual_seed(n * 10 + h)
        x = (torch.randn(n, 40, h, 7).half() * 3, torch.randn(n, 24, h, 7).half())
        out = method.execute(list(x))[0]
        with torch.no_grad():
            ref = module.float()(*(t.float() for t in x))
        module.half()
        assert out.shape == ref.shape and relative_error(out.float(), ref) <= RTOL


def test_split_k_bad_setting_is_a_clear_error():
    module = nn.Conv2d(64, 32, 3, padding=1).eval().half()
    em = lower(module, (_x(1, 64, 5, 5).half(),))
    with pytest.raises(ValueError, match="VKDELEGATE_COOPCONV_SPLITK=many: expected an integer from 1 to 16"):
        chosen_shaders(em, COOPMAT_EMULATE=True, COOPCONV_SPLITK="many")
