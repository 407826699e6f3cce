"""Our et_vk ops and ExecuTorch's own et_vk ops import in one process, in either order."""
import subprocess
import sys

import pytest

SCRIPT = """
import sys, torch
def ours():
    from vkdelegate.quant.library import define
    return define("vkd_test_scale(Tensor x, float s) -> Tensor", lambda x, s: x * s)
def theirs():
    import executorch.backends.vulkan.custom_ops_lib  # noqa: F401
if sys.argv[1] == "ours_first":
    op = ours(); theirs()
else:
    theirs(); op = ours()
assert torch.equal(op(torch.ones(2), 3.0), torch.full((2,), 3.0))
assert torch.ops.et_vk.linear_q4gsw is not None  # ExecuTorch's op is still there
print("ok")
"""


@pytest.mark.parametrize("order", ["ours_first", "theirs_first"])
def test_et_vk_namespaces_coexist(order):
    r = subprocess.run([sys.executable, "-c", SCRIPT, order], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]


def test_names_must_carry_the_prefix():
    from vkdelegate.quant.library import define
    with pytest.raises(ValueError, match="vkd_"):
        define("linear_q4gsw(Tensor x) -> Tensor", lambda x: x)
