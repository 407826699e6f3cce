"""backends/linear_act_fusion.py: a float linear whose only user is a relu or a gelu becomes one
et_vk.vkd_linear_act dispatch (the activation applied as the product is stored); a linear with
other users keeps its own activation; results match eager in float32 and under force_fp16 (the
cooperative-matrix kernels, their emulated twins on lavapipe)."""
import torch

from helpers import dispatch_ops, lower, run_pte
from kernel_check import chosen_shaders
import vkdelegate.runtime as rt
from vkdelegate.examples.models import MODELS


class TwoUsers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 24)

    def forward(self, x):
        y = self.fc(x)
        return torch.nn.functional.gelu(y, approximate="tanh"), y * 2.0


def test_mlp_relus_go_into_the_linears():
    model, inputs = MODELS["mlp"]()
    em = lower(model, inputs)
    ops = dispatch_ops(em)
    assert not any("relu" in op for op in ops), ops
    assert sum("vkd_linear_act" in op for op in ops) == 2, ops
    torch.testing.assert_close(run_pte(em.to_executorch().buffer, inputs)[0], model(*inputs), rtol=1e-5, atol=1e-5)


def test_a_linear_with_other_users_keeps_its_activation():
    torch.manual_seed(0)
    model, x = TwoUsers().eval(), torch.randn(5, 16)
    em = lower(model, (x,))
    ops = dispatch_ops(em)
    assert not any("vkd_linear_act" in op for op in ops) and any("gelu" in op for op in ops), ops
    for ours, ref in zip(run_pte(em.to_executorch().buffer, (x,)), model(x)):
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5)


def test_fp16_through_the_cooperative_matrix_kernels():
    """force_fp16 linears of many rows take the cooperative-matrix kernel (its emulated twin here),
    which applies the activation in its epilogue too: one dispatch, the same result."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU()).eval()
    x = torch.randn(200, 64)
    em = lower(model, (x,), options={"force_fp16": True})
    settings = {"COOPMAT_EMULATE": "1"}
    with rt.overrides(**settings):
        out = run_pte(em.to_executorch().buffer, (x,))[0]
    shaders = chosen_shaders(em, **settings)
    # force_fp16's casts at the boundary, and the product with its gelu between them
    assert len(shaders) == 3 and "coop" in shaders[1] and not any("unary" in s for s in shaders), shaders
    torch.testing.assert_close(out.float(), model(x), rtol=2e-2, atol=2e-2)
