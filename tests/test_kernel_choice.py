"""The kernel choice of matrix products (runtime/ops/matmul_choice.cpp) as the pure
function it is: problem sizes, device properties and settings in, the kernel out. No
GPU is used, so the H100's choices are checked here too; the measurements behind them:
benchmarks/results/kernel_choice_h100.md."""
import pytest

from vkdelegate.runtime import _vkdelegate

H100 = dict(max_shared_memory=232448, max_storage_buffer_range=2**32 - 1, subgroup_size=32,
            subgroup_arithmetic=True, shader_float16=True, cooperative_matrix=True,
            cooperative_matrix_shapes=["16x16x16 f16->f32"], max_workgroup_invocations=1024,
            max_workgroup_size=[1024, 1024, 64], max_workgroup_count=[2**31 - 1, 65535, 65535])
LAVAPIPE = dict(type="cpu", max_shared_memory=32768, max_storage_buffer_range=2**31 - 1, subgroup_size=8,
                subgroup_arithmetic=True, shader_float16=True, max_workgroup_invocations=1024,
                max_workgroup_size=[1024, 1024, 1024], max_workgroup_count=[65535, 65535, 65535])


def mm(m, k, n, dtype="float32", batch=1):
    """A row-major product, B contiguous in n (mm, bmm)."""
    return dict(dtype=dtype, M=m, N=n, K=k, batch=batch, a_sb=m * k, a_sm=k, a_sk=1, b_sb=k * n, b_sk=n, b_sn=1,
                c_sb=m * n)


def linear(m, k, n, dtype="float32"):
    """x [m, k] against a weight [n, k]: B contiguous in k."""
    return dict(dtype=dtype, M=m, N=n, K=k, batch=1, a_sm=k, a_sk=1, b_sk=1, b_sn=k, c_sb=m * n)


def choose(problem, device, **settings):
    return _vkdelegate.choose_matmul(problem, device, settings)


def test_large_float32_products_take_the_tiled_kernel():
    c = choose(mm(4096, 4096, 4096), H100)
    assert (c["kernel"], c["shader"], c["local"], c["tile"], c["splits"], c["group_m"]) == \
        ("tiled", "matmul_tiledu_nb_f32", (16, 16, 1), (128, 128), 1, 8)
    assert choose(mm(4096, 4096, 4096), H100, TILED_MM_UNROLL=False, TILED_MM_GROUP=3)["shader"] == \
        "matmul_tiled_nb_f32"
    assert choose(mm(4096, 4096, 4096), H100, NO_TILED_MM=True)["kernel"] == "strided"
    assert choose(mm(4096, 4096, 4096), H100, TILED_MM_GROUP=3)["group_m"] == 3


def test_few_tiles_split_k_by_the_cost_model():
    """1024^3: 64 tiles of 128 x 128 on 132 SMs; the cost model splits K (each slice at
    least 32); a side below 64, too little work, or MM_SPLITK=1 keeps matmul.glsl."""
    c = choose(mm(1024, 1024, 1024), H100)
    assert c["kernel"] == "tiled" and c["shader"] == "matmul_tiledu_sk_nb_f32", c
    assert 2 <= c["splits"] <= 1024 // 32
    assert choose(linear(77, 1024, 1024), H100)["shader"] == "matmul_tiledu_sk_kb_f32"
    assert choose(mm(48, 1024, 1024), H100)["kernel"] == "strided"
    assert choose(mm(64, 128, 256), H100)["kernel"] == "strided"
    assert choose(mm(1024, 1024, 1024), H100, MM_SPLITK=1)["kernel"] == "strided"


def test_small_float32_products_split_k_on_64_tiles():
    """Under the cost model's work (ViT-tiny's 197-row linears): on a GPU, 64 x 64 tiles whose
    K slices give about two workgroups an SM, each slice whole K steps of 8 and none empty; K
    under 192, a CPU device or MM_SPLITK (even 1) keep matmul.glsl."""
    for (m, k, n), splits in [((197, 192, 576), 8), ((197, 192, 768), 6), ((197, 192, 192), 12),
                              ((197, 768, 192), 20)]:
        c = choose(linear(m, k, n), H100)
        assert (c["kernel"], c["shader"], c["local"], c["tile"], c["splits"]) == \
            ("tiled", "matmul_tiledu_sk_kb_f32", (8, 8, 1), (64, 64), splits), (m, k, n, c)
        steps = -(-k // 8)
        per = -(-steps // splits)
        assert (splits - 1) * per < steps  # the last slice holds at least one step
    assert choose(mm(64, 512, 64), H100)["splits"] == 64  # one tile, a step a slice
    c = choose(mm(197, 768, 192, batch=2), H100)  # 24 tiles: 11 slices of 9 steps
    assert (c["tile"], c["splits"]) == ((64, 64), 11)
    assert choose(linear(197, 128, 576), H100)["kernel"] == "strided"
    assert choose(linear(197, 768, 192), LAVAPIPE)["kernel"] == "strided"
    assert choose(linear(197, 768, 192), H100, MM_SPLITK=1)["kernel"] == "strided"


def test_forced_split_and_configuration():
    c = choose(mm(5, 8, 7), LAVAPIPE, MM_SPLITK=3)
    assert (c["shader"], c["splits"]) == ("matmul_tiledu_sk_nb_f32", 3)
    c = choose(mm(5, 8, 7), LAVAPIPE, TILED_MM="8,16,8")
    assert (c["shader"], c["local"], c["tile"], c["splits"]) == ("matmul_tiledu_nb_f32", (8, 16, 1), (128, 64), 1)
    # bk 16 is always unrolled, and its two K steps (33 KiB) do not fit lavapipe's 32 KiB
    assert choose(mm(5, 8, 7), H100, TILED_MM="16,16,16", TILED_MM_UNROLL=False)["shader"] == \
        "matmul_tiled16u_nb_f32"
    assert choose(mm(5, 8, 7), LAVAPIPE, TILED_MM="16,16,16")["kernel"] == "strided"


def test_split_scratch_fits_one_binding():
    """The partial sums of all slices must fit one storage binding."""
    small = dict(H100, max_storage_buffer_range=3 * 4 * 1024 * 1024)
    assert choose(mm(1024, 1024, 1024), small, MM_SPLITK=8)["splits"] == 3


def test_few_rows_take_gemv():
    c = choose(linear(1, 4096, 4096), H100)
    assert (c["kernel"], c["shader"], c["local"], c["tile"]) == ("gemv", "gemv", (32, 8, 1), (1, 8))
    assert choose(linear(32, 256, 64), LAVAPIPE)["kernel"] == "gemv"
    assert choose(linear(32, 256, 64), LAVAPIPE, GEMV_MAX_ROWS=1)["kernel"] == "strided"
    assert choose(linear(32, 256, 64), LAVAPIPE, MM_SPLITK=2)["kernel"] == "tiled"
    assert choose(linear(512, 64, 512), LAVAPIPE)["kernel"] == "strided"  # 8 x 8 tiles of 64: enough
    assert choose(mm(1, 1024, 2048), LAVAPIPE)["kernel"] == "strided"  # B contiguous in n: no gemv
    # but for tiny float32 products (mm 64^3: 4 workgroups of matmul.glsl's smallest tile)
    assert choose(mm(64, 64, 64), H100)["kernel"] == "gemv"
    assert choose(mm(1, 64, 64), LAVAPIPE)["kernel"] == "strided"  # not on a CPU device
    assert choose(mm(1, 64, 64), dict(LAVAPIPE, type="integrated"))["kernel"] == "gemv"
    assert choose(mm(64, 64, 64), H100, GEMV_MAX_ROWS=1)["kernel"] == "strided"
    assert choose(mm(64, 64, 64, "float16"), LAVAPIPE)["kernel"] == "strided"


@pytest.mark.parametrize("problem,tile", [
    (mm(4096, 4096, 4096, "float16"), "w2_nb"),           # 512 workgroups of 128 x 256
    (mm(1000, 1024, 1032, "float16", batch=3), "w2_nb"),  # 120
    (mm(1000, 777, 1500, "float16"), "l64_nb"),           # 96 of 128 x 128
    (mm(1000, 1500, 777, "float16"), "mk4b_nb"),          # 56 of 128 x 128
    (linear(1000, 1500, 777, "float16"), "mk4b_kb"),
    (linear(231, 1000, 1234, "float16"), "mk4b_kb"),      # 20 of 128 x 128; 160 of r's 32 x 64
    (linear(197, 192, 768, "float16"), "rs2_kb"),         # ViT-tiny's fc1: 84 of 32 x 64
    (linear(197, 768, 192, "float16"), "rs2_kb"),         # its fc2: 21
])
def test_float16_products_take_cooperative_matrices(problem, tile):
    c = choose(problem, H100)
    assert (c["kernel"], c["shader"], c["group_m"]) == ("coop", f"matmul_coop_{tile}_f16", 8)
    assert choose(problem, H100, COOPMM_GROUP=2)["group_m"] == 2
    assert choose(problem, H100, NO_COOPMAT=True)["kernel"] == "strided"
    assert choose(problem, dict(H100, subgroup_size=64))["kernel"] == "strided"


def test_cooperative_matrix_variants_by_shared_memory():
    """Lavapipe's 32 KiB: the emulated rs2 for few tiles, mk4 where r's would be 128 or more
    (mk4b does not fit), l1 for many (l64 does not fit); a forced variant that does not fit
    keeps matmul.glsl; without the emulation, no cooperative matrices there."""
    p = mm(300, 70, 90, "float16")
    c = choose(p, LAVAPIPE, COOPMAT_EMULATE=True)
    assert (c["shader"], c["local"], c["tile"]) == ("matmul_coop_emu_rs2_nb_f16", (256, 1, 1), (32, 64))
    c = choose(mm(1024, 70, 256, "float16"), LAVAPIPE, COOPMAT_EMULATE=True)  # 128 of rs2's tiles
    assert (c["shader"], c["local"], c["tile"]) == ("matmul_coop_emu_mk4_nb_f16", (512, 1, 1), (64, 64))
    c = choose(mm(1024, 64, 1024, "float16"), LAVAPIPE, COOPMAT_EMULATE=True)
    assert (c["shader"], c["local"], c["tile"]) == ("matmul_coop_emu_l1_nb_f16", (256, 1, 1), (128, 128))
    assert choose(p, LAVAPIPE, COOPMAT_EMULATE=True, COOPMM_TILE="m")["shader"] == "matmul_coop_emu_m_nb_f16"
    assert choose(p, LAVAPIPE, COOPMAT_EMULATE=True, COOPMM_TILE="l")["kernel"] == "strided"
    assert choose(p, LAVAPIPE)["kernel"] == "strided"
    assert choose(mm(300, 70, 90), LAVAPIPE, COOPMAT_EMULATE=True)["kernel"] != "coop"  # float32


def test_cooperative_matrix2_variants_need_the_extension_and_aligned_rows():
    p = mm(256, 512, 256, "float16")
    with2 = dict(H100, cooperative_matrix2=True)
    assert choose(p, with2, COOPMM_TILE="c2_l")["shader"] == "matmul_coop2_l_nb_f16"
    assert choose(p, H100, COOPMM_TILE="c2_l")["kernel"] == "strided"
    assert choose(mm(256, 510, 256, "float16"), with2, COOPMM_TILE="c2_l")["kernel"] == "strided"
    assert choose(p, with2)["shader"] == "matmul_coop_rs2_nb_f16"  # only forced


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="VKDELEGATE_COOPMM_TILE=huge: expected one of l, lt,"):
        choose(mm(8, 8, 8, "float16"), H100, COOPMM_TILE="huge")
    with pytest.raises(ValueError, match="unknown device property 'smem'"):
        _vkdelegate.choose_matmul(mm(8, 8, 8), {"smem": 1})
    with pytest.raises(ValueError, match="unknown product field 'rows'"):
        _vkdelegate.choose_matmul({"rows": 8}, H100)


def conv(cin, cout, taps, pixels, batch=1, groups=1, dtype="float32", transposed=False):
    """A convolution of cin -> cout channels, `taps` kernel taps, `pixels` output pixels an image."""
    return dict(dtype=dtype, transposed=transposed, groups=groups, batch=batch, icpg=cin // groups,
                ocpg=cout // groups, kernel_taps=taps, out_pixels=pixels)


def choose_conv(problem, device, **settings):
    return _vkdelegate.choose_conv(problem, device, settings)


@pytest.mark.parametrize("problem,shader", [
    (conv(64, 64, 9, 56 * 56, batch=32), "conv2d_tiled_c64_f32"),    # 784 c64 workgroups
    (conv(256, 256, 9, 14 * 14, batch=32), "conv2d_tiled_c32_f32"),  # c64: 196, c32: 392
    (conv(128, 128, 9, 28 * 28, batch=8), "conv2d_tiled_c64_f32"),   # 98 with K = 1152
    (conv(45, 83, 9, 16 * 15, batch=64), "conv2d_tiled_c32_f32"),    # c64 would pad 83 to 128
    (conv(64, 64, 9, 56 * 56), "conv2d_gemm_sk"),                    # batch 1: 25 workgroups
    (conv(64, 256, 1, 56 * 56), "conv2d_gemm_sk"),                   # K = 64 (ResNet-50's expansion)
    (conv(16, 96, 1, 56 * 56, batch=32), "conv2d_gemm"),             # K = 16
    (conv(64, 8, 9, 56 * 56, batch=32), "conv2d"),                   # 8 output channels
    (conv(16, 16, 9, 56 * 56, groups=16), "conv2d_dw"),
    (conv(16, 32, 9, 19 * 19, transposed=True), "conv_transpose2d"),
])
def test_float32_convolutions(problem, shader):
    assert choose_conv(problem, H100)["shader"] == shader


def test_conv_gemm_variants_by_tiles():
    """conv2d_gemm from 256 tiles of 64 x 64, sk (32 x 16) from 96 of its tiles, else sk16."""
    assert choose_conv(conv(19, 70, 9, 40 * 40, batch=8), H100, NO_TILED_CONV=True)["shader"] == "conv2d_gemm"
    assert choose_conv(conv(45, 83, 15, 31 * 27), H100)["shader"] == "conv2d_gemm_sk"
    c = choose_conv(conv(70, 36, 9, 7 * 7), H100)
    assert (c["shader"], c["local"], c["tile"]) == ("conv2d_gemm_sk16", (4, 4, 16), (16, 16))
    assert choose_conv(conv(70, 36, 9, 7 * 7), H100, CONV_GEMM="gemm")["shader"] == "conv2d_gemm"
    # a variant beyond the device's limits falls back to one within them (sk: 14 KB of shared
    # memory, sk16 16 KB, gemm 8 KB), else to the direct kernel
    assert choose_conv(conv(45, 83, 15, 31 * 27), dict(H100, max_shared_memory=14000))["shader"] == "conv2d_gemm"
    assert choose_conv(conv(45, 83, 15, 31 * 27), dict(H100, max_shared_memory=8000))["shader"] == "conv2d"


def test_float16_convolutions_take_cooperative_matrices():
    # many tiles: l, unsplit
    c = choose_conv(conv(64, 64, 9, 56 * 56, batch=32, dtype="float16"), H100)
    assert (c["kernel"], c["shader"], c["local"], c["tile"], c["splits"]) == \
        ("coop", "conv2d_coop_l_f16", (128, 1, 1), (64, 64), 1)
    # 512 channels at 7 x 7, batch 1: 32 tiles of m, K = 4608 cut into 8 slices (about 256 workgroups)
    c = choose_conv(conv(512, 512, 9, 7 * 7, dtype="float16"), H100)
    assert (c["shader"], c["splits"]) == ("conv2d_coop_m_sk_f16", 8)
    assert choose_conv(conv(512, 512, 9, 7 * 7, dtype="float16"), H100, COOPCONV_SPLITK=1)["shader"] == \
        "conv2d_coop_m_f16"
    assert choose_conv(conv(512, 512, 9, 7 * 7, dtype="float16"), H100, COOPCONV_TILE="s",
                       COOPCONV_SPLITK=3)["shader"] == "conv2d_coop_s_sk_f16"
    # a short K (one stage) is not split
    assert choose_conv(conv(8, 64, 1, 40 * 40, dtype="float16"), LAVAPIPE, COOPMAT_EMULATE=True)["splits"] == 1
    assert choose_conv(conv(128, 32, 9, 5 * 5, dtype="float16"), LAVAPIPE,
                       COOPMAT_EMULATE=True)["shader"] == "conv2d_coop_emu_m_sk_f16"
    assert choose_conv(conv(64, 64, 9, 56 * 56, dtype="float16"), H100, NO_COOPMAT=True)["kernel"] == "gemm"
    assert choose_conv(conv(64, 64, 9, 56 * 56, dtype="float16"), LAVAPIPE)["kernel"] == "gemm"


def test_forced_tiled_convolution():
    """TILED_CONV=1 takes the kernel at any size (the variant by channels), never for
    groups, transposed or float16 convolutions."""
    assert choose_conv(conv(40, 36, 1, 9 * 7, batch=3), LAVAPIPE, TILED_CONV="1")["shader"] == "conv2d_tiled_c64_f32"
    assert choose_conv(conv(40, 36, 1, 9 * 7, batch=3), LAVAPIPE, TILED_CONV="c128")["local"] == (16, 16, 1)
    assert choose_conv(conv(16, 32, 9, 81, groups=2), LAVAPIPE, TILED_CONV="1")["kernel"] == "gemm"
    assert choose_conv(conv(16, 32, 9, 81, dtype="float16"), LAVAPIPE, TILED_CONV="1")["kernel"] == "gemm"
    assert choose_conv(conv(64, 64, 9, 56 * 56, batch=32), H100, NO_TILED_CONV=True)["kernel"] == "gemm"


def test_choices_stay_within_the_workgroup_limits():
    """On a device of Vulkan's minimum 128 invocations (VKDELEGATE_DEVICE_PROFILE=vulkan-min on
    any device), every choice keeps its workgroup within it: pipeline creation refuses one that
    is not."""
    small = dict(LAVAPIPE, max_workgroup_invocations=128, max_workgroup_size=[128, 128, 64], max_shared_memory=16384)
    c = choose(linear(1, 64, 64), small)
    assert (c["kernel"], c["local"], c["tile"]) == ("gemv", (32, 4, 1), (1, 4))
    c = choose(mm(2048, 2048, 2048), small)  # tiled's 16 x 16 is over: matmul.glsl's 8 x 8
    assert (c["kernel"], c["local"]) == ("strided", (8, 8, 1))
    assert choose(mm(2048, 2048, 2048), LAVAPIPE)["kernel"] == "tiled"
    # every conv2d_gemm variant (256 invocations each) is over too: the direct kernel
    c = choose_conv(conv(70, 36, 9, 7 * 7), small)
    assert (c["shader"], c["local"]) == ("conv2d", (64, 1, 1))
    c = choose_conv(conv(70, 36, 9, 7 * 7), dict(small, max_workgroup_invocations=256, max_workgroup_size=[256, 256, 64]))
    assert c["shader"] == "conv2d_gemm_sk16"
    for problem in [conv(64, 64, 9, 56 * 56, batch=32), conv(19, 70, 9, 40 * 40, batch=8)]:
        c = choose_conv(problem, small)
        x, y, z = c["local"]
        assert x * y * z <= 128, c
