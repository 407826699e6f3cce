"""Shapes that select each faster kernel variant (fast kernel variants), against eager PyTorch:
matmul tiles, the matrix-vector kernel, the multi-element
same-shape binary path, split-K and wide-tile implicit-GEMM convolution, softmax
rows kept in registers."""
import pytest
import torch
from helpers import TOLERANCES, cpu_ops, delegate_calls, lower, run_pte
from torch import nn


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _check(module, inputs, kind):
    em = lower(module.eval(), inputs)
    assert len(delegate_calls(em)) == 1 and cpu_ops(em) == []
    out = run_pte(em.to_executorch().buffer, inputs)[0]
    torch.testing.assert_close(out, module(*inputs), **TOLERANCES[kind])


def _randn(*shape):
    return torch.randn(*shape)


CASES = {
    "bmm_64_tiles": (Fn(torch.bmm), lambda: (_randn(2, 1031, 9), _randn(2, 9, 1100)), "matmul"),
    # 64 x 64 tiles with tails in M, N and K; addmm with a broadcast bias
    "mm_64_tiles_tails": (Fn(torch.mm), lambda: (_randn(1025, 13), _randn(13, 1031)), "matmul"),
    "addmm_64_tiles_bias": (Fn(lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0)),
                            lambda: (_randn(1, 1290), _randn(1300, 5), _randn(5, 1290)), "matmul"),
    # linear at batch 1: gemv, K not a multiple of 32, N not a multiple of 8
    "linear_gemv": (nn.Linear(77, 37), lambda: (_randn(1, 77),), "matmul"),
    "linear_gemv_no_bias_rank3": (nn.Linear(300, 13, bias=False), lambda: (_randn(1, 1, 300),), "matmul"),
    # same-shape binary: several elements per invocation, a tail of 1..3
    "add_same_shape_tail": (Fn(lambda a, b: a + b), lambda: (_randn(1031, 7), _randn(1031, 7)), "elementwise"),
    "mul_same_shape_small": (Fn(torch.mul), lambda: (_randn(3), _randn(3)), "elementwise"),
    "sub_alpha_same_shape": (Fn(lambda a, b: torch.sub(a, b, alpha=3)), lambda: (_randn(5, 9, 13), _randn(5, 9, 13)),
                             "elementwise"),
    # convolution: split-K 32 x 16 tiles with 8 slices (batch 1, 2115 pixels)
    "conv_split_k": (nn.Conv2d(5, 40, 3, padding=1), lambda: (_randn(1, 5, 45, 47),), "matmul"),
    # convolution: split-K 16 x 16 tiles with 16 slices (few tiles), deep K with slices idle at the end
    "conv_split_k16_deep": (nn.Conv2d(70, 36, 3, padding=1), lambda: (_randn(1, 70, 5, 6),), "matmul"),
    # convolution: the 64 x 64 tiles once there are enough of them (batch 8 x 17 x 17)
    "conv_wide_tiles_batch": (nn.Conv2d(4, 20, 3, padding=1), lambda: (_randn(8, 4, 60, 61),), "matmul"),
    # softmax: rows in registers (64 and 256 invocations), a long row past the cache, a strided dim
    "softmax_short_cached": (Fn(lambda x: torch.softmax(x, -1)), lambda: (_randn(7, 333) * 4,), "reduction"),
    "softmax_long_cached": (Fn(lambda x: torch.softmax(x, -1)), lambda: (_randn(3, 1500) * 4,), "reduction"),
    "log_softmax_long_uncached": (Fn(lambda x: torch.log_softmax(x, -1)), lambda: (_randn(2, 4500) * 4,),
                                  "reduction"),
    "softmax_dim0_long": (Fn(lambda x: torch.softmax(x, 0)), lambda: (_randn(1100, 3) * 4,), "reduction"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_variant_matches_eager(case):
    torch.manual_seed(0)
    module, make_inputs, kind = CASES[case]
    _check(module, make_inputs(), kind)
