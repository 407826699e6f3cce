"""matmul_tiled.glsl (the float32 kernel for large products) in every
configuration the host can pick (forced with the setting TILED_MM), on shapes that hit
its edges: M, N, K not multiples of the tile or of BK, K below BK, unaligned K or N
(scalar loads and stores), bias with alpha/beta, B contiguous in n (mm, bmm, addmm) or
in k (linear). The op samples in op_registry.py cover the default selection.
Split-K (MM_SPLITK=n: slices of K into a scratch, then
matmul_splitk_reduce.glsl): slice counts that do not divide K, K below the slice
count, bmm, linear with bias on 3-D inputs, addmm's alpha/beta, infinities; each
test proves from the shaders that ran that the split ran."""
import pytest
import torch

import vkdelegate.runtime as rt
from helpers import TOLERANCES, lower
from kernel_check import chosen_shaders, lower_once, run_forcing

# (M, K, N): aligned with a partial last K step; unaligned K and N; K below BK (aligned
# and not); one tile or less.
SHAPES = [(130, 36, 132), (129, 19, 131), (67, 4, 72), (66, 3, 70), (5, 8, 7)]


class Products(torch.nn.Module):
    def __init__(self, k, n):
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(k, n)

    def forward(self, a, b, a3, b3, bias):
        return (torch.mm(a, b), self.linear(a), torch.bmm(a3, b3),
                torch.addmm(bias, a, b, beta=0.5, alpha=2.0))


@pytest.mark.parametrize("config", ["8,8,8", "16,8,8", "8,16,8", "16,16,8", "16,16,16",
                                    "8,8,8 unroll group3", "16,8,8 group2", "16,16,8 unroll group8"])
def test_tiled_configs(config):
    xyb = config.split()[0]
    settings = dict(TILED_MM=xyb, TILED_MM_UNROLL="unroll" in config,
                    TILED_MM_GROUP=int(config.split("group")[1]) if "group" in config else 0)
    # the shader of the mm (B contiguous in n): bk 16 is always unrolled
    bk16 = xyb.endswith(",16")
    mm_shader = "matmul_tiled" + ("16" if bk16 else "") + ("u" if bk16 or "unroll" in config else "") + "_nb_f32"
    # a configuration whose two shared K steps do not fit the device keeps matmul.glsl (16,16,16 on lavapipe)
    x, y, bk = map(int, xyb.split(","))
    if 2 * bk * (2 * y + 1 + 2 * x + 1) * 16 > rt.device_info()["max_shared_memory"]:
        mm_shader = "matmul_f32"
    for m, k, n in SHAPES:
        torch.manual_seed(m * 1000 + n)
        inputs = (torch.randn(m, k), torch.randn(k, n), torch.randn(2, m, k), torch.randn(2, k, n),
                  torch.randn(n))
        module = Products(k, n)
        refs = module(*inputs)
        em = lower_once(("fp32mm", m, k, n), module, inputs)  # the same lowering for every configuration
        run = run_forcing(module, inputs, edge_manager=em, **settings)
        assert mm_shader in run.shaders, (config, run.shaders)
        for out, ref in zip(run.outputs, refs):
            torch.testing.assert_close(out, ref, **TOLERANCES["matmul"], msg=f"{config} {(m, k, n)}")


class Products3D(torch.nn.Module):
    """linear on a 3-D input (bias), bmm of batch 3, addmm with alpha and beta."""
    def __init__(self, k, n):
        super().__init__()
        torch.manual_seed(1)
        self.linear = torch.nn.Linear(k, n)

    def forward(self, x3, a3, b3, a, b, bias):
        return self.linear(x3), torch.bmm(a3, b3), torch.addmm(bias, a, b, beta=-1.5, alpha=0.25)


def products3d_inputs(m, k, n):
    return (torch.randn(2, m, k), torch.randn(3, m, k), torch.randn(3, k, n), torch.randn(m, k),
            torch.randn(k, n), torch.randn(m, n))


# (M, K, N) on top of SHAPES: K of 1 (every slice but the first empty), K not a
# multiple of 4 over several BK steps, a long K with N a multiple of 4.
SPLIT_SHAPES = SHAPES + [(3, 1, 5), (37, 77, 41), (20, 520, 12)]


def check_split(module, inputs, products, expect_split=True, scales=None, key=None, **settings):
    """Lowers and runs `module` with `settings`, checks from the shaders that ran that
    its `products` took the split (or, expect_split=False, none did), compares with
    PyTorch (each output divided by its scale: large magnitudes cancel to results small
    beside them)."""
    em = lower_once(key, module.eval(), inputs) if key is not None else None
    run = run_forcing(module.eval(), inputs, edge_manager=em, **settings)
    shaders = run.shaders
    tiled = [s for s in shaders if s.startswith("matmul_tiled")]
    reduces = shaders.count("matmul_splitk_reduce_f32")
    if expect_split:
        assert len(tiled) == products and reduces == products, shaders
        assert all("_sk_" in s for s in tiled), shaders
    else:
        assert reduces == 0 and not any("_sk_" in s for s in tiled), shaders
    refs = module(*inputs)
    for out, ref, scale in zip(run.outputs, refs, scales or [1.0] * len(refs)):
        torch.testing.assert_close(out / scale, ref / scale, **TOLERANCES["matmul"], equal_nan=True)
    return shaders


# (TILED_MM, slices); 16,16,16 needs more shared memory than lavapipe has.
@pytest.mark.parametrize("config,splits", [("default", 2), ("default", 3), ("default", 7), ("8,8,8", 3),
                                           ("8,16,8", 5), ("16,8,8", 4)])
def test_splitk(config, splits):
    settings = dict(MM_SPLITK=splits, TILED_MM=None if config == "default" else config)
    for m, k, n in SPLIT_SHAPES:
        torch.manual_seed(m * 1000 + n + k)
        inputs = (torch.randn(m, k), torch.randn(k, n), torch.randn(2, m, k), torch.randn(2, k, n),
                  torch.randn(n))
        check_split(Products(k, n), inputs, 4, key=("fp32mm-split", m, k, n), **settings)


@pytest.mark.parametrize("splits", [2, 5])
def test_splitk_3d_and_edges(splits):
    for m, k, n in [(33, 67, 29), (64, 40, 68)]:
        torch.manual_seed(m + k + n)
        inputs = products3d_inputs(m, k, n)
        check_split(Products3D(k, n), inputs, 3, MM_SPLITK=splits)
        # Large magnitudes (sums near 1e36, no overflow) and infinities: inf rows
        # and columns give inf or NaN in any summation order, as in PyTorch.
        x3, a3, b3, a, b, bias = (t.clone() for t in inputs)
        a3 *= 1e17
        b3 *= 1e17
        a[1, k // 2] = float("inf")
        b[k - 1, 3] = float("-inf")
        bias[2, 0] = float("nan")
        check_split(Products3D(k, n), (x3, a3, b3, a, b, bias), 3, scales=[1.0, 1e34, 1.0], MM_SPLITK=splits)


def test_splitk_default_selection():
    """Without the setting the cost model splits products of few tiles (512 x 2048 x 512:
    16 tiles; the batch-1 transformer linear 77 x 1024 -> 1024 with bias: 8 tiles);
    a side below 64 (M=48) stays on matmul.glsl; MM_SPLITK=1 turns the split off."""
    torch.manual_seed(3)
    inputs = (torch.randn(512, 2048) * 0.1, torch.randn(2048, 512) * 0.1)
    check_split(MatMul(), inputs, 1)
    linear = torch.nn.Linear(1024, 1024)
    check_split(LinearOnly(linear), (torch.randn(77, 1024),), 1)
    narrow = (torch.randn(48, 1024) * 0.1, torch.randn(1024, 1024) * 0.1)
    assert "matmul_f32" in check_split(MatMul(), narrow, 1, expect_split=False)
    assert not any(s.startswith("matmul_tiled") for s in check_split(MatMul(), inputs, 1, expect_split=False,
                                                                     MM_SPLITK=1))


class LinearOnly(torch.nn.Module):
    def __init__(self, linear):
        super().__init__()
        self.linear = linear

    def forward(self, x):
        return (self.linear(x),)


class MatMul(torch.nn.Module):
    def forward(self, a, b):
        return (torch.mm(a, b),)


@pytest.mark.parametrize("value", ["x", "-1", "65"])
def test_splitk_bad_value(value):
    em = lower(MatMul().eval(), (torch.randn(8, 8), torch.randn(8, 8)))
    with pytest.raises(ValueError, match=f"VKDELEGATE_MM_SPLITK={value}: expected an integer from 0 to 64"):
        chosen_shaders(em, MM_SPLITK=value)


class DynamicProducts(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(2)
        self.linear = torch.nn.Linear(40, 36)

    def forward(self, x, a3, b3):
        return self.linear(x), torch.bmm(a3, b3)


def test_splitk_dynamic_shapes():
    """One program with upper-bound dynamic M and K: the slice count is fixed at load,
    each size recomputes the slice length (K from 64 down to 3: slices end up empty)."""
    m, k = torch.export.Dim("m", min=1, max=70), torch.export.Dim("k", min=1, max=64)
    module = DynamicProducts().eval()
    example = (torch.randn(70, 40), torch.randn(2, 70, 64), torch.randn(2, 64, 33))
    em = lower(module, example, options={"require_dynamic_shapes": True},
               dynamic_shapes=({0: m}, {1: m, 2: k}, {1: k}))
    run = run_forcing(module, example, edge_manager=em, MM_SPLITK=4)
    assert run.shaders.count("matmul_splitk_reduce_f32") == 2, run.shaders
    method = run.method
    for rows, depth in [(70, 64), (5, 3), (33, 17), (70, 64), (1, 40)]:
        inputs = (torch.randn(rows, 40), torch.randn(2, rows, depth), torch.randn(2, depth, 33))
        outs = method.execute(list(inputs))
        for out, ref in zip(outs, module(*inputs)):
            torch.testing.assert_close(out, ref, **TOLERANCES["matmul"], msg=f"{rows} x {depth}")
