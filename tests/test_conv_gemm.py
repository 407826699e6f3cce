"""conv2d_gemm.glsl's three variants (64 x 64 tiles; split-K 32 x 16 with 8 slices; 16 x 16
with 16 slices) on long K (many steps, so the register-staged loads and the per-step
advance of (ic, kh, kw) without divisions wrap over kernel rows and input channels), with
strides, dilations, asymmetric kernels and paddings, against eager PyTorch. The shader
that ran is checked, so each variant is proven taken."""
import pytest
import torch

from helpers import TOLERANCES, lower
from kernel_check import assert_ran, chosen_shaders, run_forcing, variant_table

TABLE = variant_table("conv_variants")


class Conv(torch.nn.Module):
    def __init__(self, cin, cout, k, stride, padding, dilation, relu):
        super().__init__()
        torch.manual_seed(cin * 31 + cout)
        self.conv = torch.nn.Conv2d(cin, cout, k, stride=stride, padding=padding, dilation=dilation)
        self.relu = relu

    def forward(self, x):
        y = self.conv(x)
        return torch.relu(y) if self.relu else y


# (variant, input shape, cout, kernel, stride, padding, dilation, relu)
CASES = [
    ("conv2d_gemm_f32", (8, 19, 40, 40), 70, 3, 1, 1, 1, True),
    ("conv2d_gemm_f32", (8, 40, 40, 40), 130, (3, 5), (2, 1), (1, 2), (2, 1), False),
    ("conv2d_gemm_sk_f32", (1, 45, 31, 29), 83, (5, 3), 1, (2, 0), 1, True),
    ("conv2d_gemm_sk_f32", (1, 33, 64, 64), 70, 3, 2, 1, (1, 2), False),
    ("conv2d_gemm_sk16_f32", (1, 70, 7, 7), 36, 3, 1, 1, 1, True),
    ("conv2d_gemm_sk_f32", (1, 60, 14, 14), 256, 3, 1, 1, 1, True),  # 104 sk tiles: sk from 96
    ("conv2d_gemm_sk16_f32", (1, 130, 5, 6), 17, (2, 3), 1, (1, 0), (2, 2), False),
    ("conv2d_gemm_sk16_f32", (1, 300, 4, 4), 20, 1, 1, 0, 1, False),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_gemm_variants(case):
    variant, shape, cout, k, stride, padding, dilation, relu = case
    module = Conv(shape[1], cout, k, stride, padding, dilation, relu).eval()
    x = torch.randn(shape) * 2
    run = run_forcing(module, (x,), NO_TILED_CONV=True)  # a newer fp32 kernel may take these otherwise
    assert_ran(run, variant)
    out = run.outputs[0]
    with torch.no_grad():
        ref = module(x)
    torch.testing.assert_close(out, ref, **TOLERANCES["matmul"])


@pytest.mark.parametrize("forced", list(TABLE.GEMM))
def test_forced_variant(forced):
    """The setting CONV_GEMM forces a variant on every GEMM convolution (where the
    device's shared memory and invocation limits allow it; lavapipe allows all)."""
    for _, shape, cout, k, stride, padding, dilation, relu in CASES[2:]:
        module = Conv(shape[1], cout, k, stride, padding, dilation, relu).eval()
        x = torch.randn(shape)
        run = run_forcing(module, (x,), NO_TILED_CONV=True, CONV_GEMM=forced)
        assert_ran(run, f"{TABLE.gemm_shader(forced)}_f32")
        with torch.no_grad():
            torch.testing.assert_close(run.outputs[0], module(x), **TOLERANCES["matmul"])


def test_forced_variant_bad_value():
    module = Conv(20, 30, 3, 1, 1, 1, False).eval()
    em = lower(module, (torch.randn(1, 20, 8, 8),))
    with pytest.raises(ValueError, match="VKDELEGATE_CONV_GEMM=sk7: expected one of gemm, sk, sk16"):
        chosen_shaders(em, CONV_GEMM="sk7")
