"""Float32 tiled convolution: the float32 implicit-GEMM convolution on matmul_tiled's register
blocking (glsl/conv2d_tiled.glsl). Lavapipe's shapes are too small for the default
selection, so the setting TILED_CONV forces it (each tile variant in turn); every
test proves from the loaded program's shaders which kernel ran. Shapes hit the edges: channels
not multiples of 4 or of the tile, input channels not a multiple of the K step
(8) or below it, pixel counts not a multiple of 4 (the scalar epilogue) or of
the tile, tiles across images (batch > 1), stride, padding 0/1/2/3, dilation,
1x1, 3x3, 5x5 and 7x7 kernels, 1-D, bias or not, the fused epilogues (residual,
ReLU, clamp), large and tiny values. Grouped, transposed and float16
convolutions keep the other kernels."""
import copy

import numpy as np
import pytest
import torch
from torch import nn

import vkdelegate.runtime as rt
from helpers import cpu_ops, delegate_calls, lower
from helpers import delegate_blob
from kernel_check import chosen_shaders, lower_once, run_forcing, variant_table
from op_samples import ConvClamp

inf = float("inf")
# K = Cin*KH*KW up to ~2000 float32 products summed in another order than PyTorch's.
TOL = dict(rtol=1e-4, atol=1e-4)


def _x(*shape, scale=1.0, seed=7):
    torch.manual_seed(seed)
    return torch.randn(*shape) * scale


def _edge_values():
    """Large, tiny and zero inputs side by side (bounds and magnitudes)."""
    x = _x(2, 9, 10, 12)
    x[0, :3] *= 1e4
    x[1, 3:6] *= 1e-4
    x[:, 6] = 0.0
    return x


CASES = {
    # name: (module factory, inputs factory)
    "odd_45to83_3x3_pad1_batch2": (lambda: nn.Conv2d(45, 83, 3, padding=1), lambda: (_x(2, 45, 13, 11),)),
    "stride2_pad2_5x5_no_bias": (lambda: nn.Conv2d(19, 40, 5, stride=2, padding=2, bias=False),
                                 lambda: (_x(3, 19, 15, 17),)),
    "stem_7x7_s2_pad3_cin3": (lambda: nn.Conv2d(3, 64, 7, stride=2, padding=3), lambda: (_x(2, 3, 23, 21),)),
    "pointwise_pad0_batch3": (lambda: nn.Conv2d(40, 36, 1), lambda: (_x(3, 40, 9, 7),)),
    "pointwise_stride2_vec_out": (lambda: nn.Conv2d(16, 130, 1, stride=2), lambda: (_x(2, 16, 16, 16),)),
    "dilation2_asym_pad0": (lambda: nn.Conv2d(12, 20, (3, 5), padding=(2, 0), dilation=(2, 1)),
                            lambda: (_x(2, 12, 11, 13),)),
    "3x3_pad0_k_step_multiple": (lambda: nn.Conv2d(16, 64, 3), lambda: (_x(4, 16, 10, 10),)),
    "conv1d_pad1": (lambda: nn.Conv1d(11, 33, 3, padding=1), lambda: (_x(3, 11, 50),)),
    "edge_values": (lambda: nn.Conv2d(9, 31, 3, padding=1), lambda: (_edge_values(),)),
    "relu_vec_out": (lambda: ConvClamp(nn.Conv2d(24, 48, 3, padding=1), 0.0, inf), lambda: (_x(2, 24, 8, 8),)),
    "relu6_s2_scalar_out": (lambda: ConvClamp(nn.Conv2d(20, 33, 3, stride=2, padding=1), 0.0, 6.0),
                            lambda: (_x(2, 20, 13, 9, scale=4.0),)),
    "residual_relu_vec_out": (lambda: ConvClamp(nn.Conv2d(32, 64, 3, padding=1), 0.0, inf),
                              lambda: (_x(2, 32, 12, 12), _x(2, 64, 12, 12, seed=8))),
    "residual_no_bound_no_bias_scalar_out": (
        lambda: ConvClamp(nn.Conv2d(17, 29, 3, padding=1, bias=False), -inf, inf),
        lambda: (_x(3, 17, 7, 9), _x(3, 29, 7, 9, seed=8))),
    "residual_hardtanh_pad1_1x1": (lambda: ConvClamp(nn.Conv2d(8, 40, 1, padding=1), -1.0, 1.0),
                                   lambda: (_x(2, 8, 6, 7), _x(2, 40, 8, 9, seed=8))),
}


def _lower(module, inputs):
    em = lower(module.eval(), inputs)
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    return em


def _conv_shaders(shaders):
    return [s for s in shaders if s.startswith("conv")]


def _run(name, **settings):
    torch.manual_seed(0)
    module = CASES[name][0]().eval()
    inputs = CASES[name][1]()
    em = lower_once(("tiled_conv", name), module, inputs)  # the same lowering for every setting
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    run = run_forcing(module, inputs, edge_manager=em, **settings)
    with torch.no_grad():
        ref = module(*inputs)
    return _conv_shaders(run.shaders), run.outputs[0], ref


@pytest.mark.parametrize("variant", list(variant_table("conv_variants").TILED))
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xdist_group(f"tiled_conv-{name}"))
                                  for name in sorted(CASES)])
def test_tiled_conv_matches_eager(name, variant):
    shaders, out, ref = _run(name, TILED_CONV=variant)
    assert shaders == [f"conv2d_tiled_{variant}_f32"], shaders
    assert out.shape == ref.shape
    torch.testing.assert_close(out, ref, **TOL)


def test_forced_on_takes_a_variant():
    """TILED_CONV=1 takes the kernel at any size, the variant by channels:
    c64, c32 where c64 would pad 83 channels to 128 (c32: 96)."""
    for name, want in (("pointwise_pad0_batch3", "c64"), ("odd_45to83_3x3_pad1_batch2", "c32")):
        shaders, out, ref = _run(name, TILED_CONV="1")
        assert shaders == [f"conv2d_tiled_{want}_f32"], (name, shaders)
        torch.testing.assert_close(out, ref, **TOL)


def test_direct_run_agrees():
    """The graph run directly gives the .pte run's values bit for bit."""
    module, inputs = CASES["residual_relu_vec_out"][0]().eval(), CASES["residual_relu_vec_out"][1]()
    run = run_forcing(module, inputs, edge_manager=_lower(module, inputs), TILED_CONV="1")
    assert _conv_shaders(run.shaders) == ["conv2d_tiled_c64_f32"]
    out = run.outputs[0]
    graph = rt.Graph(delegate_blob(run.edge_manager), overrides={"TILED_CONV": "1"})
    direct = graph.run([x.numpy() for x in inputs])[0]
    np.testing.assert_array_equal(direct, out.numpy())


@pytest.mark.parametrize("kind", ["groups2", "depthwise", "transposed", "float16"])
def test_other_convolutions_keep_their_kernels(kind):
    """Forced on, the tiled kernel still leaves what it cannot run to the others."""
    torch.manual_seed(0)
    x = _x(2, 16, 9, 9)
    module = {"groups2": lambda: nn.Conv2d(16, 32, 3, padding=1, groups=2),
              "depthwise": lambda: nn.Conv2d(16, 16, 3, padding=1, groups=16),
              "transposed": lambda: nn.ConvTranspose2d(16, 32, 3, stride=2),
              "float16": lambda: nn.Conv2d(16, 32, 3, padding=1)}[kind]().eval()
    if kind == "float16":
        module, x = module.half(), x.half()
    run = run_forcing(module, (x,), edge_manager=_lower(module, (x,)), TILED_CONV="1", NO_COOPMAT=True)
    shaders = _conv_shaders(run.shaders)
    assert shaders and not any("tiled" in s for s in shaders), shaders
    out = run.outputs[0]
    with torch.no_grad():
        ref = copy.deepcopy(module).float()(x.float()) if kind == "float16" else module(x)
    tol = dict(rtol=2e-3, atol=2e-3) if kind == "float16" else TOL
    torch.testing.assert_close(out.float(), ref, **tol)


class _Conv(nn.Module):
    def __init__(self, c, oc, k, **kw):
        super().__init__()
        self.conv = nn.Conv2d(c, oc, k, **kw)

    def forward(self, x):
        return self.conv(x)


def _selected(module, x, **settings):
    """The conv shaders the graph builder picks (no run: the shapes are large)."""
    return _conv_shaders(chosen_shaders(_lower(module, (x,)), **{"TILED_CONV": None, "NO_TILED_CONV": None,
                                                                  **settings}))


def test_default_selection():
    """Without the setting: taken where its tiles fill a large GPU
    (>= 256 workgroups: 32 x 64 x 56 x 56 gives 784; >= 96 with K >= 512), not at
    batch 1 of the same layer (25 workgroups: the split-K GEMM kernel), not with few
    channels or a short K; c32 where only it reaches 256 workgroups or c64 would pad
    the channels much more. NO_TILED_CONV turns it off."""
    conv = _Conv(64, 64, 3, padding=1).eval()
    big, small = torch.zeros(32, 64, 56, 56), torch.zeros(1, 64, 56, 56)
    assert _selected(conv, big) == ["conv2d_tiled_c64_f32"]
    assert _selected(conv, big, NO_TILED_CONV=True) == ["conv2d_gemm_f32"]
    assert _selected(conv, small) == ["conv2d_gemm_sk_f32"]
    # 256 channels at 14 x 14: c64 gives 49 x 4 = 196 workgroups, c32 392.
    deep = _Conv(256, 256, 3, padding=1).eval()
    assert _selected(deep, torch.zeros(32, 256, 14, 14)) == ["conv2d_tiled_c32_f32"]
    # 128 channels at 28 x 28, batch 8: 98 c64 workgroups (c32: 196), K = 1152.
    mid = _Conv(128, 128, 3, padding=1).eval()
    assert _selected(mid, torch.zeros(8, 128, 28, 28)) == ["conv2d_tiled_c64_f32"]
    # ResNet-50's 64 -> 256 1x1 at batch 1: 100 c64 workgroups but K = 64.
    expand = _Conv(64, 256, 1).eval()
    assert not any("tiled" in s for s in _selected(expand, small))
    # 83 channels: c64 computes 128, c32 96.
    odd = _Conv(45, 83, 3, stride=2, padding=1).eval()
    assert _selected(odd, torch.zeros(64, 45, 31, 29)) == ["conv2d_tiled_c32_f32"]
    few_out = _Conv(64, 8, 3, padding=1).eval()
    assert not any("tiled" in s for s in _selected(few_out, big))
    few_in = _Conv(3, 64, 3, padding=1).eval()
    assert not any("tiled" in s for s in _selected(few_in, big[:, :3]))
    short_k = _Conv(16, 96, 1).eval()  # K = 16 (MobileNet's expansions)
    assert not any("tiled" in s for s in _selected(short_k, big[:, :16]))


def test_bad_forced_variant_is_an_error():
    module, inputs = CASES["pointwise_pad0_batch3"][0]().eval(), CASES["pointwise_pad0_batch3"][1]()
    with pytest.raises(ValueError, match="VKDELEGATE_TILED_CONV=c99: expected one of 0, 1, c32, c64, c128"):
        chosen_shaders(lower(module, inputs), TILED_CONV="c99")
