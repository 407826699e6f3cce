"""Products with a few rows against a weight contiguous in k (linear layers of a small
batch or a short sequence) take gemv.glsl when matmul.glsl's tiles could not fill the GPU:
the shader that ran is checked, results against eager PyTorch in float32 and float16, with
bias, 3-D inputs, odd sizes, K shorter than the 32 invocations that split it, and a dynamic
row count; the setting GEMV_MAX_ROWS=1 keeps such products on matmul.glsl."""
import pytest
import torch

from helpers import TOLERANCES, lower, run_pte
from kernel_check import chosen_shaders, run_forcing


def linear(k, n, bias=True, dtype=torch.float32):
    torch.manual_seed(k * 7 + n)
    return torch.nn.Linear(k, n, bias=bias).to(dtype)


# (input shape, N, bias)
CASES = [((32, 256), 64, False), ((1, 32, 77), 129, True), ((3, 5, 19), 7, True),
         ((64, 40), 33, True), ((2, 300), 1000, False)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape,n,bias", CASES, ids=[str(c) for c in CASES])
def test_few_rows_take_gemv(shape, n, bias, dtype):
    module = linear(shape[-1], n, bias, dtype)
    x = torch.randn(shape).to(dtype) * 3
    run = run_forcing(module, (x,))
    assert [s for s in run.shaders if s.startswith("gemv")], run.shaders
    out = run.outputs[0]
    with torch.no_grad():
        # float16: float32 math on the half values, rounded once (as the kernels compute)
        bias_f = module.bias.float() if bias else None
        ref = torch.nn.functional.linear(x.float(), module.weight.float(), bias_f).to(dtype)
    tol = TOLERANCES["fp16_matmul" if dtype == torch.float16 else "matmul"]
    torch.testing.assert_close(out, ref, **tol)


def test_setting_keeps_matmul():
    module, x = linear(256, 64), torch.randn(32, 256)
    run = run_forcing(module, (x,), GEMV_MAX_ROWS=1)
    assert any(s.startswith("matmul") for s in run.shaders), run.shaders
    torch.testing.assert_close(run.outputs[0], module(x).detach(), **TOLERANCES["matmul"])


def test_many_rows_keep_tiles():
    module, x = linear(64, 512), torch.randn(512, 64)  # 8 x 16 tiles of 64: enough workgroups
    shaders = chosen_shaders(lower(module, (x,)))
    assert not any(s.startswith("gemv") for s in shaders), shaders


def test_dynamic_rows():
    module = linear(96, 50)
    rows = torch.export.Dim("rows", min=2, max=48)
    em = lower(module, (torch.randn(48, 96),), dynamic_shapes=({0: rows},))
    assert [s for s in chosen_shaders(em) if s.startswith("gemv")], chosen_shaders(em)
    pte = em.to_executorch().buffer
    for m in (48, 5, 2, 31):
        x = torch.randn(m, 96)
        torch.testing.assert_close(run_pte(pte, (x,))[0], module(x).detach(), **TOLERANCES["matmul"])
