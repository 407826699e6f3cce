"""VKDELEGATE_DEVICE_PROFILE (docs/device-profiles.md): the runtime sees a phone GPU's smaller
limits and missing features on any device, checks every pipeline against them, and the op
cases still match eager under each profile with no validation error.

The profile is read when the device opens, so the runs under a profile are subprocesses: the
runner for errors at load (and, in tests/test_models.py, for the example models under each of
helpers.PHONE_PROFILES), pytest for a slice of the op cases."""
import json
import os
import subprocess
import sys

import pytest

import vkdelegate.runtime as rt
from helpers import PHONE_PROFILES, profile_env, run_pte_with_runner, to_pte
from vkdelegate.examples.models import MODELS
from vkdelegate.runtime import _vkdelegate as native

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _device_info_under(profile):
    code = ("import json, vkdelegate.runtime as rt\n"
            "print(json.dumps(rt.device_info() if rt.is_available() else {'unavailable': rt.unavailable_reason()}))")
    r = subprocess.run([sys.executable, "-c", code], env=profile_env(profile), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---- the setting's text, parsed as the runtime parses it (no device needed)

def test_named_profiles_parse_and_keys_change_them():
    assert set(PHONE_PROFILES) <= set(native._device_profile_names())
    for name in native._device_profile_names():
        p = native._parse_device_profile(name)
        assert {"shared", "invocations", "size", "binding", "fp16", "int64", "intdot", "coopmat"} <= set(p), name
    base = native._parse_device_profile("adreno-6xx")
    changed = native._parse_device_profile("adreno-6xx,fp16=0,shared=8192")
    assert changed["fp16"] == 0 and changed["shared"] == 8192
    assert {k: v for k, v in changed.items() if k not in ("fp16", "shared")} == \
        {k: v for k, v in base.items() if k not in ("fp16", "shared")}
    assert native._parse_device_profile("invocations=256,size=256x256x64") == {
        "invocations": 256, "size": [256, 256, 64]}
    assert native._parse_device_profile("") == {}


@pytest.mark.parametrize("text, message", [
    ("pixel-9", "not key=value, nor a profile name"),
    ("shared=16384,mali-g7x", "not key=value, nor a profile name"),
    ("shared=16k", "is not a whole number"),
    ("invocations=0", "must be at least 1"),
    ("size=64x64", "expected XxYxZ"),
    ("fp16=2", "expected 0 or 1"),
    ("subgroup=16", "subgroup size cannot be set"),
    ("warp=32", "unknown key 'warp'"),
])
def test_bad_profile_text_is_a_clear_error(text, message):
    with pytest.raises(RuntimeError, match=message):
        native._parse_device_profile(text)


# ---- shared memory read from SPIR-V at pipeline creation

def test_shared_memory_is_read_exactly_from_spirv():
    # reduce.glsl's argmax: CT partial[gl_WorkGroupSize.x] and int partial_index[...] (float CT):
    # specialization-constant-sized, so it follows the local size.
    assert native._shader_shared_bytes("reduce_argmax_f32", [128, 1, 1]) == 128 * (4 + 4)
    assert native._shader_shared_bytes("reduce_argmax_f32", [32, 1, 1]) == 32 * (4 + 4)
    # matmul_tiled.glsl: vec4 a_tile[2][BK][SA], b_tile[2][BK][SB], SA = 8 * WY / 4 + 1: the
    # formula its kernel choice uses (matmul_choice.cpp, tiled_shared_bytes: 16896 at 16x16, bk 8).
    assert native._shader_shared_bytes("matmul_tiled_nb_f32", [16, 16, 1]) == 2 * 8 * (33 + 33) * 16
    assert native._shader_shared_bytes("matmul_tiled16u_nb_f32", [16, 16, 1]) == 2 * 16 * (33 + 33) * 16
    # A shader without shared memory.
    assert native._shader_shared_bytes("binary_add_f32", [256, 1, 1]) == 0


def test_every_shader_shared_memory_can_be_sized():
    """Pipeline creation must size each shader (else it refuses it): every embedded shader."""
    for name in native._shader_names():
        assert native._shader_shared_bytes(name, [64, 1, 1]) >= 0


# ---- under a profile: the device seen, and the errors

def test_device_info_shows_the_lowered_limits():
    real = rt.device_info()
    seen = _device_info_under("vulkan-min")
    assert seen["profile"] == "vulkan-min"
    assert seen["max_shared_memory"] == min(16384, real["max_shared_memory"])
    assert seen["max_workgroup_invocations"] == min(128, real["max_workgroup_invocations"])
    assert seen["max_workgroup_size"] == [min(a, b) for a, b in zip([128, 128, 64], real["max_workgroup_size"])]
    assert seen["max_storage_buffer_range"] == min(2**27, real["max_storage_buffer_range"])
    assert not (seen["storage_16bit"] or seen["shader_float16"] or seen["shader_int64"]
                or seen["integer_dot_product"] or seen["cooperative_matrix"])
    assert seen["subgroup_size"] == real["subgroup_size"]  # never changed


def test_a_profile_cannot_raise_a_limit():
    real = rt.device_info()
    seen = _device_info_under(f"shared={real['max_shared_memory'] * 2}")
    assert "a profile can only lower limits" in seen["unavailable"]
    assert "maxComputeSharedMemorySize" in seen["unavailable"]
    if not real["cooperative_matrix"]:
        seen = _device_info_under("coopmat=1")
        assert "can only lower" in seen["unavailable"] and "cooperativeMatrix" in seen["unavailable"]


def test_a_kernel_over_the_limits_is_an_error_naming_its_shader(tmp_path):
    """The validation layer checks only the real device's limits: the runtime's own check
    refuses a workgroup over the invocations it sees (here 16, below every kernel's)."""
    model, inputs = MODELS["mlp"]()
    r = run_pte_with_runner(to_pte(model, inputs), inputs, tmp_path, profile_env("invocations=16"))
    assert r.returncode != 0
    assert "maxComputeWorkGroupInvocations 16" in r.stdout + r.stderr and "shader '" in r.stdout + r.stderr
    assert "validation error" not in r.stderr


def test_a_float16_program_under_a_profile_without_fp16_is_an_error_at_load(tmp_path):
    model, inputs = MODELS["mlp"]()
    r = run_pte_with_runner(to_pte(model, inputs, {"force_fp16": True}), inputs, tmp_path, profile_env("fp16=0"))
    assert r.returncode != 0
    assert "the graph has float16 tensors" in r.stderr and "VKDELEGATE_DEVICE_PROFILE=fp16=0" in r.stderr


# ---- a slice of the op cases under each profile (models: tests/test_models.py)

# The entries whose kernels choose local sizes, tiles or shared memory by the device's limits
# (matmul, linear and the quantized linears, convolutions, long-row softmax and layer_norm, attention:
# the tiled and short kernels by shared memory, and over a KV cache), in float32, and in float16 where the profile keeps it (fp16=0 makes a float16 program an error at
# load, as VKDELEGATE_DISABLE_FP16 does). Not the int64_wide cases: their values are outside int32, an error by
# design where int64 lives as int32 (int64=0).
OP_SLICE = ("(matmul or linear or convolution or conv2d_clamp or softmax or layer_norm or sdpa_kv_cache "
            "or scaled_dot_product_attention or sdpa_qkv) "
            "and not int64_wide")
# The strictest profile, and the one between it and the real device (16 KB of shared memory,
# 512 invocations, float16 on): between them the fallbacks at each limit. mali-g7x, whose
# limits on lavapipe differ only in invocations and binding, runs the models only.
OP_SLICE_PROFILES = ["adreno-6xx", "vulkan-min"]


@pytest.mark.parametrize("profile", OP_SLICE_PROFILES)
def test_op_slice_matches_eager_under_profile(profile):
    tests = "test_op_matches_eager"
    if native._parse_device_profile(profile)["fp16"]:
        tests = f"({tests} or test_op_fp16_matches_eager)"
    r = subprocess.run([sys.executable, "-m", "pytest", os.path.join(REPO_ROOT, "tests", "test_ops.py"),
                        "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts=",
                        "-k", f"{tests} and {OP_SLICE}"],
                       env=profile_env(profile), capture_output=True, text=True, timeout=600, cwd=REPO_ROOT)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and " failed" not in r.stdout
