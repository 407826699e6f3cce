"""Same-shape binary ops read and write 4-vectors (binary.glsl's 128-bit path) and
finish the last numel % 4 elements one by one: every remainder, tensors shorter
than one vector, float16 and int32 storage, edge values, and a dynamic size that
shrinks to a length that is not a multiple of 4 at run time."""
import pytest
import torch

from helpers import TOLERANCES, cpu_ops, lower, run_pte


def run_on_gpu(op, a, b):
    em = lower(Binary(op), (a, b))
    assert not cpu_ops(em), cpu_ops(em)  # the op ran in the delegate, not on the CPU
    return run_pte(em.to_executorch().buffer, (a, b))[0]


class Binary(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, a, b):
        return self.op(a, b)


OPS = {
    "add": lambda a, b: a + b * 2,  # add with alpha folded into a mul: two same-shape dispatches
    "sub": torch.sub,
    "mul": torch.mul,
    "maximum": torch.maximum,
}


@pytest.mark.parametrize("numel", [1, 3, 4, 5, 6, 7, 1023, 4099])
@pytest.mark.parametrize("op", sorted(OPS))
def test_float32_every_remainder(op, numel):
    torch.manual_seed(numel)
    a, b = torch.randn(numel), torch.randn(numel)
    out = run_on_gpu(OPS[op], a, b)
    torch.testing.assert_close(out, OPS[op](a, b), **TOLERANCES["elementwise"])


def test_edge_values_in_vectors_and_tail():
    vals = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 3e38, -3e38, 1e-45, 1.0])
    a = vals.repeat(3)[:, None].expand(27, 3).contiguous()  # 81 elements: 20 vectors + 1
    b = vals.flip(0).repeat(3)[:, None].expand(27, 3).contiguous()
    for op in (torch.add, torch.mul, torch.maximum):
        out = run_on_gpu(op, a, b)
        torch.testing.assert_close(out, op(a, b), equal_nan=True, **TOLERANCES["elementwise"])


@pytest.mark.parametrize("shape", [(3, 5, 7), (2, 2), (1,)])
def test_float16(shape):
    torch.manual_seed(0)
    a, b = torch.randn(shape).half(), torch.randn(shape).half()
    out = run_on_gpu(torch.add, a, b)
    torch.testing.assert_close(out, a + b, **TOLERANCES["fp16_elementwise"])


@pytest.mark.parametrize("shape", [(5, 7), (8,), (2,)])
def test_int32(shape):
    a = torch.randint(-2**31, 2**31 - 1, shape, dtype=torch.int32)
    b = torch.randint(-1000, 1000, shape, dtype=torch.int32)
    for op in (torch.mul, torch.sub, torch.bitwise_xor):
        out = run_on_gpu(op, a, b)
        torch.testing.assert_close(out, op(a, b), rtol=0, atol=0)


def test_dynamic_size_shrinks_to_odd_length():
    n = torch.export.Dim("n", min=2, max=64)
    a, b = torch.randn(64), torch.randn(64)
    em = lower(Binary(torch.mul), (a, b), dynamic_shapes=({0: n}, {0: n}))
    method_pte = em.to_executorch().buffer
    for length in (64, 13, 2, 63):
        x, y = torch.randn(length), torch.randn(length)
        out = run_pte(method_pte, (x, y))[0]
        assert out.shape == (length,)
        torch.testing.assert_close(out, x * y, **TOLERANCES["elementwise"])
