"""Ops that torch.export decomposes before the partitioner sees them: they must
still run wholly on the GPU through the ops they decompose into."""
import pytest
import torch

from helpers import TOLERANCES, cpu_ops, delegate_calls, lower, run_pte


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _x(*sizes):
    torch.manual_seed(0)
    return torch.randn(*sizes) * 2


CASES = {
    "hardshrink": (lambda x: torch.nn.functional.hardshrink(x, 0.7), (_x(7, 13),)),
    "baddbmm": (lambda b, x, y: torch.baddbmm(b, x, y, beta=0.5, alpha=2.0), (_x(1, 5, 7), _x(3, 5, 4), _x(3, 4, 7))),
    "matmul_broadcast_batch": (torch.matmul, (_x(2, 3, 5, 4), _x(4, 6))),
    "matmul_vector": (torch.matmul, (_x(3, 5, 4), _x(4))),
    "std_dims": (lambda x: torch.std(x, dim=(0, 2), keepdim=True), (_x(4, 5, 6),)),
    "narrow": (lambda x: torch.narrow(x, 1, 2, 5), (_x(3, 9, 4),)),
    "transpose_last": (lambda x: x.transpose(-1, -2).contiguous(), (_x(2, 3, 5),)),
    "masked_fill_like_where": (lambda x: torch.where(x > 0, x, torch.zeros_like(x)), (_x(7, 13),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_decomposed_op_runs_on_gpu(name):
    fn, inputs = CASES[name]
    module = Fn(fn)
    em = lower(module, inputs)
    assert cpu_ops(em) == [] and len(delegate_calls(em)) == 1
    out = run_pte(em.to_executorch().buffer, inputs)[0]
    torch.testing.assert_close(out, module(*inputs), **TOLERANCES["matmul"])
