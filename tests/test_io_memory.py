"""Where inputs and outputs live on a GPU whose memory the host cannot map (a discrete GPU):
small ones (IO_DIRECT_KB) in host-visible buffers the kernels read and write directly, larger
ones through staging copies. lavapipe maps all its memory, so DISCRETE_MEMORY (a process
setting: a subprocess importing only vkdelegate.runtime) makes it take a discrete GPU's paths:
both are checked against eager PyTorch, over several executes with new inputs, under the
validation layer (synchronization validation sees a missing host barrier)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from helpers import delegate_blob, lower
import vkdelegate.runtime as rt


class SmallAndLarge(torch.nn.Module):
    """A small input and output (under 64 KiB) beside a large one (80,000 bytes)."""

    def forward(self, a, b):
        return a * 2.0 + 1.0, (b * 3.0 - 1.0) + a.sum()


SHAPES = ((3, 5), (200, 100))


def test_direct_and_staged_inputs_and_outputs_match_eager(tmp_path):
    model = SmallAndLarge().eval()
    torch.manual_seed(0)
    blob = delegate_blob(lower(model, tuple(torch.randn(*s) for s in SHAPES)))
    (tmp_path / "blob.bin").write_bytes(blob)
    runs = [[torch.randn(*s) for s in SHAPES] for _ in range(3)]
    for k, inputs in enumerate(runs):
        for i, x in enumerate(inputs):
            x.numpy().tofile(tmp_path / f"in_{k}_{i}.bin")
    child = textwrap.dedent(f"""
        import json, numpy as np, vkdelegate.runtime as rt
        d, shapes = {str(tmp_path)!r}, {SHAPES!r}
        out = {{}}
        for io_kb in ("64", "0"):
            g = rt.Graph(open(d + "/blob.bin", "rb").read(), overrides={{"IO_DIRECT_KB": io_kb}})
            results = []
            for k in range(3):  # the same graph, new inputs each time: nothing stale
                xs = [np.fromfile(f"{{d}}/in_{{k}}_{{i}}.bin", dtype=np.float32).reshape(s)
                      for i, s in enumerate(shapes)]
                results.append([y.tolist() for y in g.run(xs)])
            out[io_kb] = {{"results": results, "staging": g.memory_report()["staging_bytes"]}}
        out["validation_errors"] = rt.validation_error_count()
        print(json.dumps(out))
    """)
    env = dict(os.environ, VKDELEGATE_DISCRETE_MEMORY="1", VKDELEGATE_VALIDATION="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["validation_errors"] == 0
    for io_kb in ("64", "0"):
        for inputs, got in zip(runs, out[io_kb]["results"]):
            for ours, ref in zip(got, model(*inputs)):
                torch.testing.assert_close(torch.tensor(ours), ref, rtol=1e-5, atol=1e-5)
    large = 200 * 100 * 4
    # 64 KiB: only the large input and output are staged; 0: all four.
    assert 2 * large <= out["64"]["staging"] < 2 * large + 4096, out
    assert out["0"]["staging"] > out["64"]["staging"], out


def test_a_gpu_with_mapped_memory_stages_nothing():
    """lavapipe as it is (one memory for host and GPU): no staging buffers at all."""
    if rt.device_info()["type"] == "discrete":
        pytest.skip("a discrete GPU stages its large inputs and outputs: the test above")
    blob = delegate_blob(lower(SmallAndLarge().eval(), tuple(torch.randn(*s) for s in SHAPES)))
    assert rt.Graph(blob).memory_report()["staging_bytes"] == 0
