"""What a new user sees first: importing the runtime, lowering and running a float model, and the
C++ runner print only our lines; the runtime's import pulls in neither torch nor ExecuTorch's
compiler (nor, through it, torchao)."""
import re
import subprocess
import sys

import vkdelegate.runtime as rt

FLOAT_MODEL_SCRIPT = r"""
import sys
import vkdelegate.runtime
print("runtime import pulled:", [m for m in ("torch", "executorch.exir", "torchao") if m in sys.modules])

import torch
from vkdelegate.partitioner import VulkanPartitioner
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
x = torch.randn(2, 8)
prog = to_edge_transform_and_lower(torch.export.export(model, (x,)),
                                   partitioner=[VulkanPartitioner()]).to_executorch()
with open(sys.argv[1], "wb") as f:
    prog.write_to_file(f)
out = Runtime.get().load_program(sys.argv[1]).load_method("forward").execute([x])[0]
print("matches eager:", bool((out - model(x)).abs().max() < 1e-5))

# The filters are narrow: the same torch deprecation raised from the user's code still shows.
torch.utils._pytree.LeafSpec()
"""


def test_float_model_and_runner_print_only_our_lines(tmp_path):
    pte = tmp_path / "float.pte"
    r = subprocess.run([sys.executable, "-c", FLOAT_MODEL_SCRIPT, str(pte)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "runtime import pulled: []\nmatches eager: True\n"
    # Only the user's own deprecated call warns.
    assert re.fullmatch(r"<string>:\d+: FutureWarning: `isinstance\(treespec, LeafSpec\)` is deprecated.*\n",
                        r.stderr), r.stderr

    run = subprocess.run([rt.runner_path(), "--model", str(pte), "--iters", "1"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert [line.split(":")[0] for line in run.stdout.splitlines()] == ["device", "model", "load", "latency over 1 iterations"]
