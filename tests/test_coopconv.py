"""coopconv family: the cooperative-matrix implicit-GEMM convolution for float16
(glsl/conv2d_coop.glslh). Lavapipe has no cooperative matrices, so these run its
emulated twin (VKDELEGATE_COOPMAT_EMULATE=1: the same indexing, the matrix
operations as loops), each tile variant forced in turn, on shapes that hit every
edge: channels and pixels not multiples of 16, K over several stages, stride,
padding, dilation, groups, batch > 1, 1x1 (the pointwise path), 1-D, and the
fused epilogue (bias, residual, clamp)."""
import copy

import pytest
import torch
from helpers import cpu_ops, delegate_calls, lower, relative_error, run_pte
from torch import nn
from vkdelegate.op_registry import _ConvClamp

inf = float("inf")

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
    "clamp_relu6": (lambda: _ConvClamp(nn.Conv2d(20, 33, 3, stride=2, padding=1), 0.0, 6.0),
                    lambda: (_x(1, 20, 13, 9, scale=4.0),)),
    "residual_relu": (lambda: _ConvClamp(nn.Conv2d(16, 17, 3, padding=1), 0.0, inf),
                      lambda: (_x(2, 16, 9, 7), _x(2, 17, 9, 7))),
    "residual_no_bound_no_bias": (lambda: _ConvClamp(nn.Conv2d(24, 48, 3, padding=1, bias=False), -inf, inf),
                                  lambda: (_x(1, 24, 7, 7), _x(1, 48, 7, 7))),
}


def _run_half(name, monkeypatch, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    torch.manual_seed(0)
    module = CASES[name][0]().eval()
    inputs = CASES[name][1]()
    half, half_inputs = copy.deepcopy(module).half(), tuple(x.half() for x in inputs)
    em = lower(half, half_inputs)
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    out = run_pte(em.to_executorch().buffer, half_inputs)[0]
    with torch.no_grad():  # float math on the half-rounded weights and inputs
        ref = copy.deepcopy(half).float()(*(x.float() for x in half_inputs))
    return out, ref


@pytest.mark.parametrize("tile", ["l", "m", "s"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_coop_conv_matches_eager(name, tile, monkeypatch):
    out, ref = _run_half(name, monkeypatch, {"VKDELEGATE_COOPMAT_EMULATE": "1", "VKDELEGATE_COOPCONV_TILE": tile})
    assert out.dtype == torch.float16 and out.shape == ref.shape
    assert relative_error(out.float(), ref) <= RTOL


def test_emulated_kernel_is_the_one_that_runs(monkeypatch):
    """The emulated kernel sums in another order than the float GEMM kernel: some
    half-rounded output differs, so the environment variable did pick it."""
    name = "deep_k_several_stages"
    emulated, _ = _run_half(name, monkeypatch, {"VKDELEGATE_COOPMAT_EMULATE": "1"})
    fallback, _ = _run_half(name, monkeypatch, {"VKDELEGATE_COOPMAT_EMULATE": "0"})
    assert not torch.equal(emulated, fallback)
