"""The cooperative-matrix float16 matmul's tile variants, the one table that
glsl/gen_shaders.py builds the shaders' variants from (matmul_coop.glsl,
matmul_coop_emu.glsl, matmul_coop2.glsl; the quantized linear's qlinear_coop.glsl
and qlinear_coop_emu.glsl the QLINEAR_TILES among them) and writes the runtime's
table from (coopmm_variants.h: kCoopMmVariants in runtime/ops/matmul_choice.h, the
names VKDELEGATE_COOPMM_TILE and VKDELEGATE_QLINEAR_COOP_TILE accept);
tests/test_coopmm.py and tests/test_qlinear_coop.py read it too.

A tile is BM x BN = (WM*FM*16) x (WN*FN*16) in WM x WN warps of FM x FN 16 x 16
accumulators; STAGES shared buffers (1 for tiles whose two would not fit 48 KiB);
BK the K step; PREFETCH=2 keeps two steps in flight in registers; KS > 1 splits each
K step among KS groups of WM x WN warps (coopmat_tile.glslh: KSPLIT). COOP2 tiles run
on matmul_coop2.glsl (VK_NV_cooperative_matrix2; the driver owns their shared
memory, so STAGES is 0), named c2_<its variant>.
"""

FIELDS = ("wm", "wn", "fm", "fn", "stages", "bk", "prefetch", "coop2", "ks")

# l: 128 x 128, 8 warps of 64 x 32 (4 x 2 accumulators), two shared buffers;
# lt: the same tile, warps of 32 x 64; l1, lt1: l, lt with one shared buffer (fit
# 32 KiB); w: 128 x 256 (one buffer), w16 with BK 16 and two; wt: 256 x 128; q:
# 128 x 128 in 4 warps of 64 x 64, q64 with BK 64 and one buffer; l64: l with BK 64,
# one buffer; m: 64 x 64, 4 warps of 2 x 2, for products with few tiles; w2, wt2,
# l2, l64p2: w, wt, l1, l64 with PREFETCH=2; h: 128 x 64 in 4 warps of 64 x 32, one
# buffer (16 KiB: three workgroups an SM), for products of too few 128 x 128 tiles;
# c2_l, c2_l64, c2_w: 128 x 128 (BK 32, 64) and 128 x 256 on matmul_coop2.glsl.
# K split within the workgroup, for products of too few tiles to fill the GPU (the
# K loop's latency is their time): mk2, mk4: m's 64 x 64 tile with 2, 4 groups of
# its 4 warps (BK 64, one buffer), mk4b: mk4 with BK 128, mk4d: mk4 with two buffers.
# (benchmarks/results/coopmm_splitk_h100_2026-11-25.md has the others tried.) r: 32 x 64,
# 2 warps, K split 4 ways, BK 64, one buffer; rs2: r with two shared buffers (one barrier a stage).
#          name      wm wn fm fn stages bk prefetch coop2 ks
TILES = [("l",       2, 4, 4, 2, 2, 32, 1, False, 1),
         ("lt",      4, 2, 2, 4, 2, 32, 1, False, 1),
         ("l1",      2, 4, 4, 2, 1, 32, 1, False, 1),
         ("lt1",     4, 2, 2, 4, 1, 32, 1, False, 1),
         ("w",       2, 4, 4, 4, 1, 32, 1, False, 1),
         ("w16",     2, 4, 4, 4, 2, 16, 1, False, 1),
         ("wt",      4, 2, 4, 4, 1, 32, 1, False, 1),
         ("q",       2, 2, 4, 4, 2, 32, 1, False, 1),
         ("q64",     2, 2, 4, 4, 1, 64, 1, False, 1),
         ("l64",     2, 4, 4, 2, 1, 64, 1, False, 1),
         ("m",       2, 2, 2, 2, 2, 32, 1, False, 1),
         ("w2",      2, 4, 4, 4, 1, 32, 2, False, 1),
         ("wt2",     4, 2, 4, 4, 1, 32, 2, False, 1),
         ("l2",      2, 4, 4, 2, 1, 32, 2, False, 1),
         ("l64p2",   2, 4, 4, 2, 1, 64, 2, False, 1),
         ("h",       2, 2, 4, 2, 1, 32, 1, False, 1),
         ("c2_l",    2, 4, 4, 2, 0, 32, 1, True, 1),
         ("c2_l64",  2, 4, 4, 2, 0, 64, 1, True, 1),
         ("c2_w",    2, 4, 4, 4, 0, 32, 1, True, 1),
         ("mk2",     2, 2, 2, 2, 1, 64, 1, False, 2),
         ("mk4",     2, 2, 2, 2, 1, 64, 1, False, 4),
         ("mk4b",    2, 2, 2, 2, 1, 128, 1, False, 4),
         ("mk4d",    2, 2, 2, 2, 2, 64, 1, False, 4),
         ("r",       1, 2, 2, 2, 1, 64, 1, False, 4),
         ("rs2",     1, 2, 2, 2, 2, 64, 1, False, 4)]

VARIANTS = {t[0]: dict(zip(FIELDS, t[1:])) for t in TILES}
COOP2_PREFIX = "c2_"

# The tiles of the weight-only quantized linear (qlinear_coop.glsl, for each of 4-
# and 8-bit weights): l64 (128 x 128, BK 64: 32 bytes of int4 words per weight row
# and stage) where its tiles fill the GPU several times, l1 where l64's 36 KiB of
# shared memory do not fit, h (128 x 64) for fewer tiles, m (64 x 64) for fewest; l
# (two buffers) to compare.
QLINEAR_TILES = ("l64", "l1", "h", "m", "l")
QLINEAR_SHADERS = ("qlinear_coop", "qlinear_coop_emu")


def _tile_defines(v):
    tile = [f"WM={v['wm']}", f"WN={v['wn']}", f"FM={v['fm']}", f"FN={v['fn']}",
            f"STAGES={v['stages']}", f"BK={v['bk']}"]
    if v["prefetch"] != 1:
        tile.append(f"PREFETCH={v['prefetch']}")
    if v["ks"] != 1:
        tile.append(f"KSPLIT={v['ks']}")
    return tile


def shader_variants(shader):
    """(variant name, defines) of the shader `shader` (a file's name without .glsl),
    one per tile it runs and layout of B (_nb: contiguous in n, _kb: in k), and per tile
    the _kb one with a residual (_kb_res) and, but for matmul_coop2, with a layer norm of A's rows (_kb_ln)."""
    if shader in QLINEAR_SHADERS:
        assert all(VARIANTS[name]["ks"] == 1 for name in QLINEAR_TILES), "qlinear_coop splits no K"
        return [(f"{shader}_{name}_b{bits}", _tile_defines(VARIANTS[name]) + ["B_KMAJOR=1", f"BITS={bits}"])
                for name in QLINEAR_TILES for bits in (4, 8)]
    coop2 = shader == "matmul_coop2"
    if shader not in ("matmul_coop", "matmul_coop_emu", "matmul_coop2"):
        raise ValueError(f"{shader}.glsl has no cooperative-matrix tile variants")
    out = []
    for name, v in VARIANTS.items():
        if v["coop2"] != coop2:
            continue
        if coop2:
            tile = [f"BM={v['wm'] * v['fm'] * 16}", f"BN={v['wn'] * v['fn'] * 16}", f"BK={v['bk']}"]
            name = name[len(COOP2_PREFIX):]
        else:
            tile = _tile_defines(v)
        for layout, kmajor in (("nb", 0), ("kb", 1)):
            out.append((f"{shader}_{name}_{layout}", tile + [f"B_KMAJOR={kmajor}"]))
        # A linear's (kb) with a residual added in the epilogue (matmul_params.glslh: RESIDUAL).
        out.append((f"{shader}_{name}_kb_res", tile + ["B_KMAJOR=1", "RESIDUAL=1"]))
        # A linear's with a layer norm of its input's rows before it (matmul_coop.glslh: LN_A).
        if not coop2:
            out.append((f"{shader}_{name}_kb_ln", tile + ["B_KMAJOR=1", "LN_A=1"]))
    return out


def cpp_header():
    """The runtime's copy: the names and the rows of kCoopMmVariants."""
    for name, v in VARIANTS.items():
        assert v["coop2"] == name.startswith(COOP2_PREFIX), name
    rows = ",\n".join(f'  {{"{name}", {v["wm"]}, {v["wn"]}, {v["fm"]}, {v["fn"]}, {v["stages"]}, {v["bk"]}, '
                      f'{"true" if v["coop2"] else "false"}, {v["ks"]}}}' for name, v in VARIANTS.items())
    return ("// Generated by glsl/gen_shaders.py from glsl/coopmm_variants.py. Do not edit.\n"
            "#pragma once\n\n"
            "// The names VKDELEGATE_COOPMM_TILE accepts.\n"
            f'#define VKD_COOPMM_VARIANT_NAMES "{"|".join(VARIANTS)}"\n\n'
            "// The names VKDELEGATE_QLINEAR_COOP_TILE accepts (qlinear_coop.glsl's tiles).\n"
            f'#define VKD_QLINEAR_COOP_VARIANT_NAMES "{"|".join(QLINEAR_TILES)}"\n\n'
            "// Rows of CoopMmVariant {name, wm, wn, fm, fn, stages, bk, coop2, ks} (runtime/ops/matmul_choice.h).\n"
            f"#define VKD_COOPMM_VARIANT_ROWS \\\n{rows.replace(chr(10), ' ' + chr(92) + chr(10))}\n")
