"""VKDELEGATE_DEVICE_PROFILE (docs/device-profiles.md): the runtime sees a phone GPU's smaller
limits and missing features on any device, checks every pipeline against them, and the op
cases still match eager under each profile with no validation error.

The profile is read when the device opens, so the runs under a profile are subprocesses: the
runner for errors at load (and, in tests/test_models.py, for the example models), pytest for a
slice of the op cases."""
import os
import subprocess
import sys

import pytest

import vkdelegate.runtime as rt
from helpers import PHONE_PROFILES, profile_env
from vkdelegate.runtime import _vkdelegate as native

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _device_info_under(profile):
    code = ("import json, vkdelegate.runtime as rt\n"
            "print(json.dumps(rt.device_info() if rt.is_available() else {'unavailable': rt.unavailable_reason()}))")
    r = subprocess.run([sys.executable, "-c", code], env=profile_env(profile), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    import json
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


def _runner_on_mlp(tmp_path, profile):
    import torch
    from helpers import to_pte
    from vkdelegate.examples.models import MODELS
    model, inputs = MODELS["mlp"]()
    pte = tmp_path / "mlp.pte"
    pte.write_bytes(to_pte(model, inputs))
    return subprocess.run([rt.runner_path(), "--model", str(pte), "--iters", "1", "--warmup", "0"],
                          env=profile_env(profile), capture_output=True, text=True, timeout=300)


def test_a_kernel_over_the_limits_is_an_error_naming_its_shader(tmp_path):
    """The validation layer checks only the real device's limits: the runtime's own check
    refuses a workgroup over the invocations it sees (here 16, below every kernel's)."""
    r = _runner_on_mlp(tmp_path, "invocations=16")
    assert r.returncode != 0
    assert "maxComputeWorkGroupInvocations 16" in r.stdout + r.stderr and "shader '" in r.stdout + r.stderr
    assert "validation error" not in r.stderr


# ---- a slice of the op cases under each profile (models: tests/test_models.py)

# The entries whose kernels choose local sizes, tiles or shared memory by the device's limits.
OP_SLICE = ("matmul or linear or conv or softmax or layer_norm or group_norm or rms_norm or sum or "
            "mean or amax or argmax or var or sdpa or embedding or index_select or cat")


@pytest.mark.parametrize("profile", PHONE_PROFILES)
def test_op_slice_matches_eager_under_profile(profile):
    r = subprocess.run([sys.executable, "-m", "pytest", os.path.join(REPO_ROOT, "tests", "test_ops.py"),
                        "-q", "-x", "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts=",
                        "-k", f"test_op_matches_eager and ({OP_SLICE})"],
                       env=profile_env(profile), capture_output=True, text=True, timeout=600, cwd=REPO_ROOT)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout
