"""Out of memory: a program whose buffers do not fit fails at load with an error giving the
bytes needed and available (OutOfMemoryError), through Graph(blob) and through ExecuTorch;
nothing aborts, and programs that fit still load. VKDELEGATE_MEMORY_LIMIT_MB is a process
setting, so the limit runs in subprocesses (importing only vkdelegate.runtime: half a second)."""
import functools
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

from helpers import delegate_blob, lower
import vkdelegate.runtime as rt

LIMIT_MB = 8
# Three 1024 x 1024 float32 weights: 12 MiB of constants, over the limit; the small model fits.
BIG = (lambda: torch.nn.Sequential(*(torch.nn.Linear(1024, 1024) for _ in range(3))), (2, 1024))
SMALL = (lambda: torch.nn.Linear(16, 16), (2, 16))


@functools.lru_cache(maxsize=None)
def lowered(spec):
    make, shape = spec
    torch.manual_seed(0)
    model, x = make().eval(), torch.randn(*shape)
    em = lower(model, (x,))
    return model, x, delegate_blob(em), em.to_executorch().buffer


def limited_env():
    env = dict(os.environ, VKDELEGATE_MEMORY_LIMIT_MB=str(LIMIT_MB))
    # `import vkdelegate` in the child resolves as in this process.
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def check_message(message, needed_at_least):
    m = re.search(r"needs (\d+) bytes .* (\d+) bytes \([\d.]+ MiB\) available", message)
    assert m, message
    needed, available = int(m.group(1)), int(m.group(2))
    assert needed >= needed_at_least and available <= LIMIT_MB << 20 and needed > available, message
    assert f"VKDELEGATE_MEMORY_LIMIT_MB={LIMIT_MB}" in message


def test_graph_over_the_limit_fails_at_load_and_a_small_one_still_runs(tmp_path):
    _, _, big_blob, _ = lowered(BIG)
    small_model, x, small_blob, _ = lowered(SMALL)
    (tmp_path / "big.bin").write_bytes(big_blob)
    (tmp_path / "small.bin").write_bytes(small_blob)
    x.numpy().tofile(tmp_path / "x.bin")
    child = textwrap.dedent(f"""
        import json, numpy as np, vkdelegate.runtime as rt
        d = {str(tmp_path)!r}
        out = {{}}
        try:
            rt.Graph(open(d + "/big.bin", "rb").read())
            out["big"] = "loaded"
        except rt.OutOfMemoryError as e:
            out["big"] = str(e)
        x = np.fromfile(d + "/x.bin", dtype=np.float32).reshape(2, 16)
        g = rt.Graph(open(d + "/small.bin", "rb").read())
        out["small"] = g.run([x])[0].tolist()
        out["block_bytes"] = rt.device_memory()["block_bytes"]
        out["validation_errors"] = rt.validation_error_count()
        print(json.dumps(out))
    """)
    r = subprocess.run([sys.executable, "-c", child], env=limited_env(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    check_message(out["big"], needed_at_least=3 * 1024 * 1024 * 4)
    torch.testing.assert_close(torch.tensor(out["small"]), small_model(x), rtol=1e-5, atol=1e-5)
    assert 0 < out["block_bytes"] <= LIMIT_MB << 20
    assert out["validation_errors"] == 0


def test_executorch_load_over_the_limit_is_an_error_not_an_abort(tmp_path):
    _, _, _, big_pte = lowered(BIG)
    (tmp_path / "big.pte").write_bytes(big_pte)
    r = subprocess.run([rt.runner_path(), "--model", str(tmp_path / "big.pte"), "--iters", "1"],
                       env=limited_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode > 0, f"rc {r.returncode}\n{r.stderr[-3000:]}"  # < 0: killed by a signal
    check_message(r.stderr, needed_at_least=3 * 1024 * 1024 * 4)


def test_program_larger_than_the_device_memory_fails_at_load():
    """No limit: an outer product whose output exceeds the largest memory heap (lavapipe's is
    2 GiB); the check happens before any buffer is made, so nothing is allocated."""
    heap = max(h["size"] for h in rt.device_memory()["heaps"])
    rows = 1024
    cols = heap // (4 * rows) + 1024
    if rows * cols >= 2**31:
        pytest.skip(f"a tensor larger than this device's {heap}-byte heap exceeds int32 numel")

    class Outer(torch.nn.Module):
        def forward(self, a, b):
            return a * b

    blob = delegate_blob(lower(Outer(), (torch.randn(rows, 1), torch.randn(1, cols))))
    before = rt.device_memory()["block_bytes"]
    with pytest.raises(rt.OutOfMemoryError, match=r"out of GPU memory: the program needs \d+ bytes"):
        rt.Graph(blob)
    assert rt.device_memory()["block_bytes"] == before
