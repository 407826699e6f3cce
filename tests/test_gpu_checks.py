"""GPU-side checks (glsl/fault.glslh): an index out of range, an integer division by
zero and, where int64 is stored as int32 (a device without shaderInt64, or
INT64_STORAGE=32), an int64 result outside int32 fail the execute with an error
naming the op, where eager PyTorch raises; in-range cases give eager's answer. With
int64 storage (lavapipe has shaderInt64), int64 results outside int32 are exact."""
import numpy as np
import pytest
import torch

import vkdelegate.runtime as rt
from helpers import delegate_blob, load_method, lower

# The indices the issue measured: in range, negative, and past the end (dim size 10);
# int64 indices outside int32 are out of range, never wrapped to their low word.
INDEX_VALUES = (3, -1, -10, -11, 10, 11, 2**20, 2**31 - 1, 2**32 + 1, 2**33, -2**33 + 3)
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
INT64_MIN = -2**63
# int64 stored as int32, as on a device without shaderInt64.
INT64_AS_INT32 = {"INT64_STORAGE": "32"}


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


def graphs(module, inputs):
    """The module's graph with int64 storage (this device has shaderInt64) and one with
    int64 stored as int32 (INT64_AS_INT32), from one lowering; the second is the error
    where loading it fails."""
    blob = delegate_blob(lower(module.eval(), inputs))
    try:
        narrow = rt.Graph(blob, overrides=INT64_AS_INT32)
    except ValueError as e:
        narrow = e
    return rt.Graph(blob), narrow


def eager(module, inputs):
    """Eager's answer, or None where eager raises."""
    try:
        with torch.no_grad():
            return module(*inputs).numpy()
    except (IndexError, RuntimeError):
        return None


def assert_outputs_equal(outs, refs):
    """Every output of a graph equals eager's (and there are as many)."""
    refs = refs if isinstance(refs, tuple) else (refs,)
    assert len(outs) == len(refs)
    for out, ref in zip(outs, refs):
        np.testing.assert_array_equal(out, ref.numpy())


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
    with pytest.raises(ValueError, match=r"index 8589934592 is out of range for dimension \d of size 10"):
        g.run([t.numpy() for t in inputs_of(torch.tensor([0, 2**33]))])


def test_int64_indices_stored_as_int32():
    """Where int64 is stored as int32, an index outside int32 fails at the input, one within is checked."""
    module, inputs_of, _ = INDEX_OPS["gather"]
    g = graph(module, inputs_of(torch.tensor([1, 2])), **INT64_AS_INT32)
    np.testing.assert_array_equal(g.run([t.numpy() for t in inputs_of(torch.tensor([9, 0]))])[0],
                                  module(*inputs_of(torch.tensor([9, 0]))).numpy())
    with pytest.raises(ValueError, match="int64 value 4294967297 does not fit the int32 the GPU stores int64"):
        g.run([t.numpy() for t in inputs_of(torch.tensor([0, 2**32 + 1]))])
    with pytest.raises(ValueError, match="index 10 is out of range"):
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
    cases = [(torch.tensor([6, v, 0]),) for v in (2, -1, 7, 2**31 - 1, 2**32 + 2, -2**40)]
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


# dtype, settings, the minimum of its storage (minimum / -1 overflows it).
DIVISION_STORAGES = {
    "int32": (torch.int32, {}, INT32_MIN),
    "int64": (torch.int64, {}, INT64_MIN),
    "int64_as_int32": (torch.int64, INT64_AS_INT32, INT32_MIN),
}


@pytest.mark.parametrize("storage", DIVISION_STORAGES)
def test_integer_division(storage):
    dtype, settings, minimum = DIVISION_STORAGES[storage]
    module = Divisions()
    a = torch.tensor([7, -7, minimum, 5, minimum + 1], dtype=dtype)
    b = torch.tensor([2, 2, 3, -3, -1], dtype=dtype)
    g = graph(module, (a, b), **settings)

    def check():
        for out, ref in zip(g.run([a.numpy(), b.numpy()]), module(a, b)):
            np.testing.assert_array_equal(out, ref.numpy())

    check()
    zero = b.clone()
    zero[1] = 0
    with pytest.raises(ValueError, match=r"aten.div.Tensor_mode\): integer division by zero \(-7 / 0\)"):
        g.run([a.numpy(), zero.numpy()])
    check()
    # The storage's minimum / -1: eager's CPU kernel traps.
    minus_one = b.clone()
    minus_one[2] = -1
    bits = 64 if minimum == INT64_MIN else 32
    with pytest.raises(ValueError, match=rf"{minimum} / -1 is outside the int{bits} range"):
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
    """int64 stored as int32: a result outside int32 is an error; with int64 storage, eager's answer."""
    module, good, bad = INT64_CASES[name]
    wide, g = graphs(module, good)
    np.testing.assert_array_equal(g.run([t.numpy() for t in good])[0], module(*good).numpy())
    with pytest.raises(ValueError, match="int64 result of .* leaves the int32 range the GPU stores int64 in"):
        g.run([t.numpy() for t in bad])
    np.testing.assert_array_equal(g.run([t.numpy() for t in good])[0], module(*good).numpy())
    for inputs in (good, bad):
        np.testing.assert_array_equal(wide.run([t.numpy() for t in inputs])[0], module(*inputs).numpy())


class Int64Arithmetic(torch.nn.Module):
    """int64 arithmetic whose values leave int32: constants, scalars, sums, products."""

    def __init__(self):
        super().__init__()
        self.register_buffer("big", torch.tensor([2**40, -3 * 2**33, 5]))

    def forward(self, x):
        y = (x + 3_000_000_000) * 3 - self.big
        return (y, y.sum(), torch.where(x > 2**35, y, -x), torch.cat([x, self.big]).amax(), x // 7,
                torch.maximum(x.abs(), -self.big) ** 1)


def test_int64_arithmetic_matches_eager():
    module = Int64Arithmetic()
    x = torch.tensor([2**40 * 3, -2**50 + 1, 123])
    g, narrow = graphs(module, (x,))
    assert "binary_add_i64" in g.shaders()
    for inputs in ((x,), (torch.tensor([2**62, -7, 2**31]),)):
        assert_outputs_equal(g.run([inputs[0].numpy()]), module(*inputs))
    # Stored as int32, the constants and scalars already leave it: an error at load.
    assert "does not fit the int32 the GPU stores int64 tensors as" in str(narrow)


class Int64Creation(torch.nn.Module):
    def forward(self, x):
        return (torch.arange(2**40, 2**40 + 3 * 2**35, 2**35) + x, torch.full((3,), -2**45) + x,
                torch.nn.functional.pad(x, (1, 1), value=2**50), x.to(torch.float32), (x.float() * 4.0).long(),
                x.to(torch.int32), x.clamp(-2**33, 2**34), x.max(dim=0).indices)


def test_int64_creation_and_conversion():
    module = Int64Creation()
    x = torch.tensor([2**40 + 1, -2**33, 7])
    g, narrow = graphs(module, (x,))
    assert_outputs_equal(g.run([x.numpy()]), module(x))
    assert "does not fit the int32 the GPU stores int64 tensors as" in str(narrow)


class FloatToInt64(torch.nn.Module):
    def forward(self, x):
        return x.to(torch.int64)


def test_float_to_int64_outside_int64():
    module = FloatToInt64()
    x = torch.tensor([2.0**62, -2.0**63, -7.9])
    g = graph(module, (x,))
    np.testing.assert_array_equal(g.run([x.numpy()])[0], module(x).numpy())
    with pytest.raises(ValueError, match=r"converting 9.22337204e\+18 to int64: outside the int64 range"):
        g.run([np.array([2.0**63, 0.0, 0.0], dtype=np.float32)])
    with pytest.raises(ValueError, match="converting nan to int64"):
        g.run([np.array([float("nan"), 0.0, 0.0], dtype=np.float32)])


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
