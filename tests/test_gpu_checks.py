"""GPU-side checks (glsl/fault.glslh): an index out of range, an integer division by
zero and an int64 result outside the int32 storage fail the execute with an error
naming the op, where eager PyTorch raises; in-range cases give eager's answer."""
import numpy as np
import pytest
import torch

import vkdelegate.runtime as rt
from helpers import delegate_blob, load_method, lower

# The indices the issue measured: in range, negative, and past the end (dim size 10).
INDEX_VALUES = (3, -1, -10, -11, 10, 11, 2**20, 2**31 - 1)
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


class Embedding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.arange(30.0).reshape(10, 3))

    def forward(self, i):
        return torch.nn.functional.embedding(i, self.weight)


class IndexSelect(torch.nn.Module):
    def forward(self, x, i):
        return torch.index_select(x, 0, i)


class Gather(torch.nn.Module):
    def forward(self, x, i):
        return torch.gather(x, 0, i)


class IndexTensor(torch.nn.Module):
    def forward(self, x, i):
        return x[:, i]


class Binary(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, a, b):
        return self.fn(a, b)


class Unary(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, a):
        return self.fn(a)


def graph(module, inputs, **overrides):
    return rt.Graph(delegate_blob(lower(module.eval(), inputs)), overrides=overrides or None)


def eager(module, inputs):
    """Eager's answer, or None where eager raises."""
    try:
        with torch.no_grad():
            return module(*inputs).numpy()
    except (IndexError, RuntimeError):
        return None


def check_against_eager(g, module, cases, op):
    """Runs every case on one graph: eager's answer where eager has one, else an
    error naming `op`; a good case after each error shows the fault was cleared."""
    good = cases[0]
    for inputs in cases:
        ref = eager(module, inputs)
        if ref is None:
            with pytest.raises(ValueError, match=rf"op #\d+ \({op}\): "):
                g.run([t.numpy() for t in inputs])
            np.testing.assert_array_equal(g.run([t.numpy() for t in good])[0], eager(module, good))
        else:
            np.testing.assert_array_equal(g.run([t.numpy() for t in inputs])[0], ref, err_msg=str(inputs))


x10 = torch.arange(10.0).reshape(1, 10).expand(2, 10).contiguous()
INDEX_OPS = {
    "embedding": (Embedding(), lambda i: (i,), "aten.embedding.default"),
    "index_select": (IndexSelect(), lambda i: (torch.arange(10.0), i), "aten.index_select.default"),
    "gather": (Gather(), lambda i: (torch.arange(10.0), i), "aten.gather.default"),
    "index_tensor": (IndexTensor(), lambda i: (x10, i), "aten.index.Tensor"),
}


@pytest.mark.parametrize("name", INDEX_OPS)
def test_indices_out_of_range(name):
    module, inputs_of, op = INDEX_OPS[name]
    g = graph(module, inputs_of(torch.tensor([1, 2])))
    assert g.shaders() == ["index_gather1_f32"]
    cases = [inputs_of(torch.tensor([1, v])) for v in INDEX_VALUES]
    check_against_eager(g, module, cases, op)
    with pytest.raises(ValueError, match=r"index 10 is out of range for dimension \d of size 10"):
        g.run([t.numpy() for t in inputs_of(torch.tensor([0, 10]))])


class TwoIndices(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("x", torch.arange(20.0).reshape(4, 5))

    def forward(self, i):
        return self.x[i, i + 2]


def test_index_tensor_names_the_dim():
    """Two index tensors: negatives wrap; the message names the dim whose index is out of range."""
    module = TwoIndices()
    g = graph(module, (torch.tensor([0, 1]),))
    np.testing.assert_array_equal(g.run([np.array([-4, 2])])[0], module(torch.tensor([-4, 2])).numpy())
    with pytest.raises(ValueError, match="index 5 is out of range for dimension 1 of size 5"):
        g.run([np.array([0, 3])])


def test_quantized_embedding_out_of_range():
    from torchao_samples import fused_op_cases
    case_id, module, (indices,) = fused_op_cases("vkd_embedding_qw")[1]  # 7 rows
    g = graph(module, (indices,))
    cases = [(torch.tensor([6, v, 0]),) for v in (2, -1, 7, 2**31 - 1)]
    check_against_eager(g, module, cases, "et_vk.vkd_embedding_qw.default")


def test_error_through_executorch():
    module = Embedding().eval()
    method = load_method(lower(module, (torch.tensor([1, 2]),)).to_executorch().buffer)
    with pytest.raises(RuntimeError):
        method.execute([torch.tensor([1, 12])])
    assert "aten.embedding.default): index 12 is out of range for dimension 0 of size 10" in rt.last_error()
    torch.testing.assert_close(method.execute([torch.tensor([9, 0])])[0], module(torch.tensor([9, 0])))


class Divisions(torch.nn.Module):
    def forward(self, a, b):
        return torch.div(a, b, rounding_mode="trunc"), torch.div(a, b, rounding_mode="floor")


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_division(dtype):
    module = Divisions()
    a = torch.tensor([7, -7, INT32_MIN, 5], dtype=dtype)
    b = torch.tensor([2, 2, 3, -3], dtype=dtype)
    g = graph(module, (a, b))

    def check():
        for out, ref in zip(g.run([a.numpy(), b.numpy()]), module(a, b)):
            np.testing.assert_array_equal(out, ref.numpy())

    check()
    zero = b.clone()
    zero[1] = 0
    with pytest.raises(ValueError, match=r"aten.div.Tensor_mode\): integer division by zero \(-7 / 0\)"):
        g.run([a.numpy(), zero.numpy()])
    check()
    # -2^31 / -1: eager's CPU kernel traps for int32; int64's answer leaves the storage.
    minus_one = b.clone()
    minus_one[2] = -1
    with pytest.raises(ValueError, match=r"-2147483648 / -1 is outside the int32 range"):
        g.run([a.numpy(), minus_one.numpy()])
    check()


INT64_CASES = {
    # name: (module, in-range inputs, inputs whose eager result leaves int32)
    "add": (Binary(torch.add), (torch.tensor([INT32_MAX - 1, -5]), torch.tensor([1, 3])),
            (torch.tensor([INT32_MAX, 0]), torch.tensor([1, 0]))),
    "add_alpha": (Binary(lambda a, b: torch.add(a, b, alpha=3)), (torch.tensor([1, 2]), torch.tensor([-4, 700000000])),
                  (torch.tensor([0, 0]), torch.tensor([0, 800000000]))),
    "sub": (Binary(torch.sub), (torch.tensor([INT32_MIN + 1, 2]), torch.tensor([1, 3])),
            (torch.tensor([INT32_MIN, 0]), torch.tensor([1, 0]))),
    "mul": (Binary(torch.mul), (torch.tensor([46340, -65536]), torch.tensor([46340, 32768])),
            (torch.tensor([46341, 1]), torch.tensor([46341, 1]))),
    "add_scalar": (Unary(lambda a: a + 2**30), (torch.tensor([2**30 - 1, INT32_MIN]),), (torch.tensor([2**30, 0]),)),
    "mul_scalar": (Unary(lambda a: a * 3), (torch.tensor([715827882, -715827882]),), (torch.tensor([715827883, 0]),)),
    "neg": (Unary(torch.neg), (torch.tensor([INT32_MAX, -5]),), (torch.tensor([INT32_MIN, 0]),)),
    "abs": (Unary(torch.abs), (torch.tensor([INT32_MIN + 1, 5]),), (torch.tensor([INT32_MIN, 0]),)),
    "pow": (Binary(torch.pow), (torch.tensor([3, -2, 7, 0]), torch.tensor([19, 31, 0, 5])),
            (torch.tensor([2, 1, 0, 0]), torch.tensor([31, 1, 0, 0]))),
    "pow_scalar": (Unary(lambda a: a ** 3), (torch.tensor([1290, -1290]),), (torch.tensor([1291, 0]),)),
    "to_int64": (Unary(lambda a: a.to(torch.int64)), (torch.tensor([-2147483648.0, 2147483520.0, -7.9]),),
                 (torch.tensor([0.0, 2147483648.0, 1.0]),)),
    # Partial sums leave int32 where the total does not: summed exactly.
    "sum": (Unary(lambda a: a.sum(dim=1)), (torch.tensor([[INT32_MAX, 1, -5], [INT32_MIN, -1, 2]]),),
            (torch.tensor([[INT32_MAX, 1, 0], [0, 0, 0]]),)),
    "sum_of_int32": (Unary(lambda a: a.sum()), (torch.tensor([INT32_MAX, 7, -9], dtype=torch.int32),),
                     (torch.tensor([INT32_MIN, -1, 0], dtype=torch.int32),)),
}


@pytest.mark.parametrize("name", INT64_CASES)
def test_int64_leaves_int32(name):
    module, good, bad = INT64_CASES[name]
    g = graph(module, good)
    np.testing.assert_array_equal(g.run([t.numpy() for t in good])[0], module(*good).numpy())
    with pytest.raises(ValueError, match="int64 result of .* leaves the int32 range the GPU stores int64 in"):
        g.run([t.numpy() for t in bad])
    np.testing.assert_array_equal(g.run([t.numpy() for t in good])[0], module(*good).numpy())


def test_int32_wraps_as_eager():
    """int32 arithmetic wraps in eager PyTorch too: no fault."""
    module = Binary(torch.add)
    a, b = torch.tensor([INT32_MAX], dtype=torch.int32), torch.tensor([1], dtype=torch.int32)
    np.testing.assert_array_equal(graph(module, (a, b)).run([a.numpy(), b.numpy()])[0], module(a, b).numpy())


def test_checks_off_for_measuring():
    """NO_GPU_CHECKS takes the unchecked kernels: an index out of range is clamped, not an error."""
    module, inputs_of, _ = INDEX_OPS["embedding"]
    g = graph(module, inputs_of(torch.tensor([1, 2])), NO_GPU_CHECKS=True)
    assert g.shaders() == ["index_gather1_nocheck_f32"]
    out = g.run([np.array([1, 12])])[0]
    np.testing.assert_array_equal(out, module.weight.detach().numpy()[[1, 9]])
