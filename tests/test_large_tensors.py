"""Tensors larger than one binding's maxStorageBufferRange (an LLM's embedding table).

The limit is lowered with VKDELEGATE_MAX_BINDING_BYTES (read when the Vulkan
context is created, so each case runs in a fresh process): embedding and
index_select along dim 0 then bind their table in windows of rows, and every
other op refuses an oversized tensor at load with a clear error.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r"""
import sys, torch
sys.path.insert(0, {tests!r})
from helpers import cpu_ops, delegate_calls, lower, run_pte

torch.manual_seed(0)
case = sys.argv[1]
if case == "embedding":
    # 1000 rows of 48 floats = 192000 bytes: 3 windows of 341 rows under a 64 KiB limit.
    module = torch.nn.Embedding(1000, 48)
    inputs = (torch.tensor([[0, 999, 340, 341, 682, 683], [5, 5, 998, 1, 500, 0]]),)
elif case == "index_select":
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.nn.Parameter(torch.randn(700, 5, 7))
        def forward(self, idx):
            return torch.index_select(self.table, 0, idx) * 2
    module = M()
    inputs = (torch.tensor([699, 0, 350, 351, 3]),)
elif case == "unsplittable":
    module = torch.nn.Linear(300, 100)  # a 120000-byte weight
    inputs = (torch.randn(2, 300),)
em = lower(module.eval(), inputs)
assert not cpu_ops(em) and len(delegate_calls(em)) == 1, cpu_ops(em)
pte = em.to_executorch().buffer
try:
    out = run_pte(pte, inputs)[0]
except Exception as e:
    print("ERROR:", e)
    sys.exit(0)
ref = module(*inputs)
err = ((out - ref).abs().max() / ref.abs().max()).item()
print("max relative error", err)
assert err < 1e-6, err
# Every window checks its indices: one past the table is an error.
import vkdelegate.runtime as rt
bad = inputs[0].clone()
bad.view(-1)[1] = module.weight.shape[0] if case == "embedding" else 700
try:
    run_pte(pte, (bad,))
    print("no error for", bad)
except RuntimeError:
    print("fault:", rt.last_error())
print("ok")
"""


def _run(case, limit):
    env = dict(os.environ, VKDELEGATE_MAX_BINDING_BYTES=str(limit))
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(tests=os.path.join(ROOT, "tests")), case],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return r.stdout


@pytest.mark.parametrize("case", ["embedding", "index_select"])
def test_tables_larger_than_a_binding_are_read_in_windows(case):
    out = _run(case, 64 * 1024)
    assert out.strip().endswith("ok"), out
    size = 1000 if case == "embedding" else 700
    assert f"fault: op #0 (aten.{case}.default): index {size} is out of range for dimension 0 of size {size}" in out, out


def test_other_ops_refuse_oversized_tensors_clearly():
    out = _run("unsplittable", 64 * 1024)
    assert "ERROR:" in out, out
