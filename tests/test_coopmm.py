"""The cooperative-matrix float16 matmul (glsl/matmul_coop.glslh).
Lavapipe has no cooperative matrices, so these run its emulated twin
(the setting COOPMAT_EMULATE: the same tiling and indexing, the matrix operations
as loops), each tile variant whose shared memory fits the device forced in turn, on
mm, addmm (alpha, beta, broadcast bias), linear (3-D input, bias; B contiguous in k)
and bmm (batch 3) at shapes that hit every edge: M, N, K not multiples of 16 or of
the tile, K not a multiple of 16 or 32 and over several stages, M = 1, rows not
16-byte aligned (guarded scalar loads and stores) and aligned ones (vector loads and
stores). The shaders of the loaded program prove which kernel ran."""

import pytest
import torch

import vkdelegate.runtime as rt
from helpers import TOLERANCES, lower, relative_error
from kernel_check import assert_ran, chosen_shaders, lower_once, run_forcing, variant_table

# One half rounding of the output is 4.9e-4 relative; the sums are float. A wrong
# index gives O(1) errors.
RTOL = 2e-3

# (M, K, N)
SHAPES = [(67, 45, 131), (129, 65, 257), (1, 37, 40), (40, 96, 136), (130, 200, 24)]


def _tile_table():
    """glsl/coopmm_variants.py: the table the shaders' variants and the runtime's are built from."""
    return variant_table("coopmm_variants").VARIANTS


# The tiles of matmul_coop_emu.glsl (the c2_ tiles run on matmul_coop2.glsl, which has no emulation).
VARIANTS = {name: v for name, v in _tile_table().items() if not v["coop2"]}


def shared_bytes(name, b_kmajor):
    v = VARIANTS[name]
    wm, wn, fm, fn, stages, bk = v["wm"], v["wn"], v["fm"], v["fn"], v["stages"], v["bk"]
    bm, bn = wm * fm * 16, wn * fn * 16
    b = bn * (bk // 8 + 1) if b_kmajor else bk * (bn // 8 + 1)
    scratch = wm * wn * v["ks"] * 64  # the epilogue's, in the A tiles
    return 16 * (max(stages * bm * (bk // 8 + 1), scratch) + stages * b)


class Mm(torch.nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)


class Addmm(torch.nn.Module):
    def forward(self, bias, a, b):
        return torch.addmm(bias, a, b, beta=0.5, alpha=2.0)


class Bmm(torch.nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


class Linear(torch.nn.Module):
    def __init__(self, k, n, bias=True):
        super().__init__()
        torch.manual_seed(1)
        self.linear = torch.nn.Linear(k, n, bias=bias)

    def forward(self, x):
        return self.linear(x)


def cases(m, k, n):
    """(name, half module, half inputs, b contiguous in k)"""
    torch.manual_seed(m * 7919 + k * 31 + n)
    r = lambda *s: torch.randn(*s).half()  # noqa: E731
    return [
        ("mm", Mm(), (r(m, k), r(k, n)), False),
        ("addmm_row_bias", Addmm(), (r(n), r(m, k), r(k, n)), False),
        ("bmm3", Bmm(), (r(3, m, k), r(3, k, n)), False),
        ("linear_3d_bias", Linear(k, n).half(), (r(2, m, k),), True),
        ("linear_no_bias", Linear(k, n, bias=False).half(), (r(m, k),), True),
    ]


def run_case(module, inputs, key=None, **settings):
    """(output, float reference on the same half values, shaders that ran); with a `key`,
    the lowering is shared with the other tests of that key (kernel_check.lower_once)."""
    em = lower_once(key, module.eval(), inputs) if key is not None else None
    run = run_forcing(module.eval(), inputs, edge_manager=em, **settings)
    with torch.no_grad():
        ref = module.float()(*(x.float() for x in inputs))
    module.half()
    return run.outputs[0], ref, run.shaders


def check(out, ref):
    assert out.dtype == torch.float16 and out.shape == ref.shape
    assert relative_error(out.float(), ref) <= RTOL
    torch.testing.assert_close(out.float(), ref, **TOLERANCES["fp16_matmul"])


@pytest.mark.parametrize("tile", sorted(VARIANTS))
@pytest.mark.parametrize("shape", [pytest.param(s, id="x".join(map(str, s)), marks=pytest.mark.xdist_group(f"coopmm-{s}"))
                                   for s in SHAPES])
def test_emulated_coop_matmul_matches_eager(tile, shape):
    smem = rt.device_info()["max_shared_memory"]
    ran = 0
    for name, module, inputs, b_kmajor in cases(*shape):
        if shared_bytes(tile, b_kmajor) > smem:
            continue
        if name.startswith("linear") and shape[0] == 1:
            continue  # one row of a linear is a matrix-vector product (gemv.glsl)
        out, ref, shaders = run_case(module, inputs, key=("coopmm", shape, name), COOPMAT_EMULATE=True,
                                     COOPMM_TILE=tile)
        kind = "kb" if b_kmajor else "nb"
        assert_ran(shaders, f"matmul_coop_emu_{tile}_{kind}_f16")
        check(out, ref)
        ran += 1
    if ran == 0:
        pytest.skip(f"variant {tile} needs more shared memory than this device's {smem} bytes")


def test_default_selection_runs_coop_and_falls_back():
    """Without a forced tile the emulated kernel is chosen for float16 products and
    agrees with eager; NO_COOPMAT (or no cooperative matrices on the device) keeps
    matmul.glsl, and float32 never takes the half kernel."""
    module, inputs = Mm(), (torch.randn(300, 70).half(), torch.randn(70, 90).half())
    out, ref, shaders = run_case(module, inputs, COOPMAT_EMULATE=True)
    assert any(s.startswith("matmul_coop_emu_") for s in shaders), shaders
    check(out, ref)

    out, ref, shaders = run_case(module, inputs, COOPMAT_EMULATE=False, NO_COOPMAT=True)
    assert "matmul_f16" in shaders and not any("coop" in s for s in shaders), shaders
    check(out, ref)

    out, ref, shaders = run_case(module, inputs, COOPMAT_EMULATE=False)
    native = rt.device_info()["cooperative_matrix"] and rt.device_info()["subgroup_size"] == 32
    assert any(s.startswith("matmul_coop_") and "emu" not in s for s in shaders) == native, shaders
    check(out, ref)

    _, _, shaders = run_case(Mm(), (torch.randn(64, 32), torch.randn(32, 64)), COOPMAT_EMULATE=True)
    assert not any("coop" in s for s in shaders), shaders


def test_bad_forced_tile_is_a_clear_error():
    inputs = (torch.randn(8, 8).half(), torch.randn(8, 8).half())
    em = lower(Mm().eval(), inputs)
    with pytest.raises(ValueError, match="VKDELEGATE_COOPMM_TILE=huge: expected one of l, lt,"):
        chosen_shaders(em, COOPMAT_EMULATE=True, COOPMM_TILE="huge")


def test_emulated_coop_matmul_resizes_in_one_loaded_program():
    """A dynamic row count: the kernel chosen at load (from the largest sizes) runs
    every size, its vector-load and store flags recomputed at each (K = 64, N = 40:
    16-byte rows; N = 36 in the linear: guarded scalar ones)."""
    rows = torch.export.Dim("rows", min=1, max=300)
    for module, b_kmajor, n in ((Mm(), False, 40), (Linear(64, 36).half(), True, 36)):
        inputs = (torch.randn(300, 64).half(),) + ((torch.randn(64, n).half(),) if not b_kmajor else ())
        dynamic = ({0: rows}, None) if not b_kmajor else ({0: rows},)
        run = run_forcing(module.eval(), inputs, dynamic_shapes=dynamic, COOPMAT_EMULATE=True)
        assert any(s.startswith("matmul_coop_emu_") for s in run.shaders), run.shaders
        method = run.method
        for m in (300, 1, 129, 17):
            torch.manual_seed(m)
            x = (torch.randn(m, 64).half(),) + inputs[1:]
            out = method.execute(list(x))[0]
            with torch.no_grad():
                ref = module.float()(*(t.float() for t in x))
            module.half()
            check(out, ref)
