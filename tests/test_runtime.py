"""The runtime joins ExecuTorch, finds a device, and says so when it cannot."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import vkdelegate.runtime as rt
from executorch.runtime import Runtime
from helpers import delegate_blob, delegate_calls, lower, lowered_modules, run_pte

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_backend_registers_with_executorch():
    assert rt.BACKEND_ID == "VkDelegateBackend"
    assert "VkDelegateBackend" in Runtime.get().backend_registry.registered_backend_names


def test_device_and_validation():
    assert rt.is_available(), rt.unavailable_reason()
    info = rt.device_info()
    assert info["name"] and info["subgroup_size"] > 0 and info["max_storage_buffer_range"] > 0
    assert rt.validation_enabled(), "tests must run with the validation layer"


def test_runtime_kernels_cover_partitioner_ops():
    """Every op the registry delegates has a kernel in the runtime."""
    import op_registry

    kernels = set(rt.registered_ops())
    for name in op_registry.registered_op_names():
        assert name in kernels, f"registry accepts {name} but the runtime has no kernel for it"


def run_python(code, env_extra):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=600)


def test_no_vulkan_device(tmp_path):
    """No driver: import works and says why; export still works; loading fails cleanly."""
    pte = tmp_path / "mlp.pte"
    r = run_python(f"""
        import torch
        import vkdelegate.runtime as rt
        from vkdelegate.examples.models import MODELS
        from vkdelegate.partitioner import VulkanPartitioner
        from executorch.exir import to_edge_transform_and_lower
        from executorch.runtime import Runtime
        assert not rt.is_available()
        print("REASON:", rt.unavailable_reason())
        m, x = MODELS["mlp"]()
        prog = to_edge_transform_and_lower(torch.export.export(m, x),
                                           partitioner=[VulkanPartitioner()]).to_executorch()
        open({str(pte)!r}, "wb").write(prog.buffer)
        try:
            Runtime.get().load_program({str(pte)!r}).load_method("forward")
        except Exception as e:
            print("LOAD FAILED:", type(e).__name__)
        print("LAST ERROR:", rt.last_error())
    """, {"VK_ICD_FILENAMES": "/nonexistent.json", "VK_DRIVER_FILES": "/nonexistent.json"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "REASON: no Vulkan driver" in r.stdout
    assert "LOAD FAILED" in r.stdout
    assert "LAST ERROR: no Vulkan device is available" in r.stdout
    assert pte.stat().st_size > 0


def test_device_choice_by_env():
    r = run_python("""
        import vkdelegate.runtime as rt
        print("AVAILABLE", rt.is_available(), rt.unavailable_reason())
    """, {"VKDELEGATE_DEVICE": "no-such-gpu"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "AVAILABLE False" in r.stdout and "matches no device" in r.stdout
    r = run_python("""
        import vkdelegate.runtime as rt
        print("NAME", rt.device_info()["name"])
    """, {"VKDELEGATE_DEVICE": "0"})
    assert r.returncode == 0 and "NAME" in r.stdout, r.stderr[-2000:]


def test_both_vulkan_delegates_in_one_process():
    """ExecuTorch's own Vulkan partitioner and ours import and lower side by side."""
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import (
        VulkanPartitioner as ExecuTorchVulkanPartitioner,
    )

    m = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    x = (torch.randn(3, 8),)
    theirs = lower(m, x, partitioner=ExecuTorchVulkanPartitioner())
    ours = lower(m, x)
    assert len(delegate_calls(ours)) == 1
    assert [module.backend_id for module in lowered_modules(theirs)] == ["VulkanBackend"]
    out = run_pte(ours.to_executorch().buffer, x)[0]
    torch.testing.assert_close(out, m(*x), rtol=1e-5, atol=1e-5)


def test_graph_runs_directly_and_reports_memory():
    from vkdelegate.backends import VkDelegateBackend  # noqa: F401
    em = lower(torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh()), (torch.randn(3, 5),))
    blob = delegate_blob(em)
    g = rt.Graph(blob)
    x = np.random.default_rng(0).standard_normal((3, 5), dtype=np.float32)
    (out,) = g.run([x])
    assert out.shape == (3, 7) and out.dtype == np.float32
    report = g.memory_report()
    assert report["constant_bytes"] >= (7 * 5 + 7) * 4
    assert report["intermediate_bytes"] > 0


def test_profiling_timestamps():
    em = lower(torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Sigmoid()), (torch.randn(4, 16),))
    g = rt.Graph(delegate_blob(em))
    g.set_profiling(True)
    g.run([np.ones((4, 16), np.float32)])
    timings = g.timings()
    assert [t[0].split("(")[1].rstrip(")") for t in timings] == ["aten.linear.default",
                                                                  "aten.sigmoid.default"]
    assert all(t[2] >= 0 for t in timings)
