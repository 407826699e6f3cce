"""Whole models through export -> .pte -> executorch.runtime, against eager PyTorch."""
import pytest
import torch

from helpers import TOLERANCES, cpu_ops, delegate_calls, lower, lowered_model, model_group, relative_error, run_pte
from vkdelegate.examples.models import MODELS


@pytest.mark.parametrize("name", [pytest.param(name, marks=model_group(name)) for name in sorted(MODELS)])
def test_model_fully_delegated_and_matches_eager(name):
    lowered = lowered_model(name)
    em, model, inputs = lowered.edge, lowered.model, lowered.inputs
    assert len(delegate_calls(em)) == 1, "the whole forward should be one partition"
    assert cpu_ops(em) == []
    out = run_pte(lowered.pte, inputs)[0]
    with torch.no_grad():
        ref = model(*inputs)
    assert out.shape == ref.shape
    assert relative_error(out, ref) <= TOLERANCES["model"]["rtol"]


def test_partial_delegation_unsupported_op_in_the_middle():
    class Mixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(16, 16)
            self.b = torch.nn.Linear(16, 8)

        def forward(self, x):
            h = torch.relu(self.a(x))
            h = torch.cumsum(h, dim=-1)  # not supported: stays on CPU
            return torch.sigmoid(self.b(h))

    torch.manual_seed(0)
    m, x = Mixed().eval(), (torch.randn(4, 16),)
    em = lower(m, x)
    assert len(delegate_calls(em)) == 2
    assert any("cumsum" in op for op in cpu_ops(em))
    out = run_pte(em.to_executorch().buffer, x)[0]
    torch.testing.assert_close(out, m(*x), **TOLERANCES["matmul"])
