"""The single source of truth of what vkdelegate runs.

One OpEntry per op: the edge-dialect overloads it covers, the dtypes it takes,
whether the runtime can resize it for dynamic shapes, an argument check,
notes for the docs, and sample cases from which tests are generated.
The partitioner delegates a node only if `REGISTRY.lookup(node)` accepts it.
"""

import functools
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

# Absolute, so that the runtime tests can also `import op_registry` from the repo root.
from vkdelegate.fx_nodes import arg, fake_tensor, node_inputs, op_name, output_tensors

MAX_RANK = 8
FP32: FrozenSet[torch.dtype] = frozenset({torch.float32})
# Integer arithmetic runs on int32 storage: int64 tensors are stored as int32 on
# the GPU (values must fit; the runtime errors otherwise), bool and int8 too.
NUMERIC: FrozenSet[torch.dtype] = frozenset({torch.float32, torch.int32, torch.int64})
# Ops that only move data work for every dtype the runtime stores.
ANY_DTYPE: FrozenSet[torch.dtype] = frozenset({torch.float32, torch.int32, torch.int64, torch.bool})

aten = exir_ops.edge.aten
dim_order_ops = exir_ops.edge.dim_order_ops


@dataclass(frozen=True)
class SampleCase:
    case_id: str
    module: torch.nn.Module
    inputs: Tuple[torch.Tensor, ...]


Check = Callable[[Node], Optional[str]]


def _accept(node: Node) -> Optional[str]:
    return None


@dataclass(frozen=True)
class OpEntry:
    name: str
    # Edge-dialect overloads this entry covers.
    targets: Tuple[object, ...]
    # Returns the sample cases, seeded; every entry has at least one.
    samples: Callable[[], List[SampleCase]]
    notes: str = ""
    dtypes: FrozenSet[torch.dtype] = FP32
    supports_resize: bool = True
    # Returns why this node cannot run, or None; called after the dtype and rank checks.
    check: Check = _accept
    # Natively implemented: the partitioner asks ExecuTorch not to decompose it.
    keep_undecomposed: bool = False
    # The runtime makes the output a view of the first argument (add_view_node:
    # same storage), so memory planning keeps both in one allocation.
    aliases_input: bool = False
    # Int arguments may be symbolic (dynamic sizes): the runtime reads them with
    # g.get_int / g.get_int_list inside its update function, so they follow
    # every resize. Without it, a node with a symbolic int argument stays on CPU.
    symint_args: bool = False
    # Numerical kind, which picks the test tolerance against eager PyTorch:
    # "elementwise", "transcendental", "reduction" or "matmul".
    kind: str = "elementwise"

    @property
    def op_names(self) -> Tuple[str, ...]:
        return tuple(op_name(target) for target in self.targets)


class OpRegistry:
    def __init__(self, entries: Sequence[OpEntry]):
        self.entries: Tuple[OpEntry, ...] = tuple(entries)
        self._by_target: Dict[object, OpEntry] = {}
        for entry in self.entries:
            for target in entry.targets:
                # ATen overloads too: ops_to_not_decompose filters ATen graphs.
                for key in (target, target._op):
                    if key in self._by_target:
                        raise ValueError(f"{op_name(target)} is in entries {self._by_target[key].name} and {entry.name}")
                    self._by_target[key] = entry

    def __iter__(self) -> Iterator[OpEntry]:
        return iter(self.entries)

    def entry_for(self, target: object) -> Optional[OpEntry]:
        """The entry covering an edge or ATen op overload, whatever the node's arguments."""
        return self._by_target.get(target)

    def lookup(self, node: Node) -> Tuple[Optional[OpEntry], Optional[str]]:
        """(entry, None) if node can run on vkdelegate, else (None, the reason)."""
        if node.op != "call_function":
            return None, f"{node.op} node"
        entry = self.entry_for(node.target)
        if entry is None:
            return None, f"{op_name(node.target)} is not in the vkdelegate op registry"
        reason = _check_tensors(node, entry) or entry.check(node)
        return (None, reason) if reason else (entry, None)

    def ops_to_keep_undecomposed(self) -> List[torch._ops.OpOverload]:
        return [target._op for entry in self.entries if entry.keep_undecomposed for target in entry.targets]


def _check_tensors(node: Node, entry: OpEntry) -> Optional[str]:
    tensors = [(f"input {item.name}", fake_tensor(item)) for item in node_inputs(node)]
    tensors += [("output", val) for val in output_tensors(node)]
    for what, val in tensors:
        if val is None:
            continue
        if val.dtype not in entry.dtypes:
            supported = ", ".join(sorted(str(dtype).replace("torch.", "") for dtype in entry.dtypes))
            return f"{what} is {str(val.dtype).replace('torch.', '')}; {entry.name} supports {supported}"
        if val.dim() > MAX_RANK:
            return f"{what} has rank {val.dim()}; at most {MAX_RANK} is supported"
    return None


# ----------------------------------------------------------------------------
# Argument checks


def _contiguous_layout(node: Node) -> Optional[str]:
    """Delegated tensors are contiguous, so only copies into contiguous layout are copies."""
    argument_names = {argument.name for argument in node.target._schema.arguments}
    if "memory_format" in argument_names:
        memory_format = arg(node, "memory_format")
        if memory_format not in (None, torch.contiguous_format, torch.preserve_format):
            return f"memory_format {memory_format} is not supported (tensors are contiguous)"
    if "dim_order" in argument_names:
        dim_order = arg(node, "dim_order")
        rank = output_tensors(node)[0].dim()
        if dim_order is not None and list(dim_order) != list(range(rank)):
            return f"dim_order {list(dim_order)} is not contiguous (tensors are contiguous)"
    return None


def _check_to_copy(node: Node) -> Optional[str]:
    dtype = arg(node, "dtype")
    if dtype not in (None, torch.float32):
        return f"conversion to {dtype} is not supported (only float32 copies)"
    return _contiguous_layout(node)


def _check_binary(node: Node) -> Optional[str]:
    """Tensor operands and output of one dtype (no type promotion); .Scalar overloads on float32."""
    dtypes = {val.dtype for val in [fake_tensor(item) for item in node_inputs(node)] + output_tensors(node)
              if val is not None}
    if len(dtypes) > 1:
        names = ", ".join(sorted(str(d).replace("torch.", "") for d in dtypes))
        return f"mixed dtypes ({names}) are not supported"
    if op_name(node.target).endswith(".Scalar") and dtypes != {torch.float32}:
        return "the .Scalar overload is supported for float32 only"
    return None


def _check_gelu(node: Node) -> Optional[str]:
    approximate = arg(node, "approximate")
    if approximate not in ("none", "tanh"):
        return f"gelu approximate={approximate!r} is not supported"
    return None


def _check_clamp(node: Node) -> Optional[str]:
    if arg(node, "min") is None and arg(node, "max") is None:
        return "clamp needs min or max"
    return None


def _check_softmax(node: Node) -> Optional[str]:
    if arg(node, "half_to_float"):
        return "half_to_float=True is not supported"
    return None


def _check_linear(node: Node) -> Optional[str]:
    weight = fake_tensor(arg(node, "weight"))
    if weight is None or weight.dim() != 2:
        return "linear weight must be a 2-D tensor"
    bias = arg(node, "bias")
    if bias is not None and (fake_tensor(bias) is None or fake_tensor(bias).dim() != 1):
        return "linear bias must be a 1-D tensor"
    return None


def _check_layer_norm(node: Node) -> Optional[str]:
    if not arg(node, "normalized_shape"):
        return "native_layer_norm needs a non-empty normalized_shape"
    return None


# ----------------------------------------------------------------------------
# Sample cases: small modules and seeded inputs with odd sizes, size-1 dims,
# broadcasting, high ranks and edge values.


class _Call(torch.nn.Module):
    """A function of the inputs as a module, so that it can be exported."""

    def __init__(self, fn: Callable, constant: Optional[torch.Tensor] = None):
        super().__init__()
        self.fn = fn
        if constant is not None:
            # A buffer: exported as a lifted constant that the delegate owns.
            self.register_buffer("constant", constant)
        else:
            self.constant = None

    def forward(self, *inputs):
        if self.constant is None:
            return self.fn(*inputs)
        return self.fn(*inputs, self.constant)


def _seeded(make_cases: Callable[[], List[SampleCase]]) -> Callable[[], List[SampleCase]]:
    """Seeds torch's global generator first: inputs and module weights repeat run to run."""

    @functools.wraps(make_cases)
    def samples() -> List[SampleCase]:
        torch.manual_seed(0)
        return make_cases()

    return samples


def _values(*sizes: int, scale: float = 1.0) -> torch.Tensor:
    """Normal values with exact zeros mixed in (the kinks of relu, clamp, gelu)."""
    values = torch.randn(sizes) * scale
    values.view(-1)[::5] = 0.0
    return values


def _wide(*sizes: int) -> torch.Tensor:
    """Large magnitudes, where sigmoid and tanh saturate and softmax overflows if done naively."""
    values = _values(*sizes, scale=30.0)
    flat = values.view(-1)
    flat[1::7] = 100.0
    flat[2::7] = -100.0
    return values


def _ints(*sizes: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    """Integers of either sign, including 0."""
    return torch.randint(-1000, 1000, sizes, dtype=dtype)


def _nonzero(*sizes: int) -> torch.Tensor:
    """Divisors: magnitudes in [0.5, 1.5) of either sign."""
    magnitudes = torch.rand(sizes) + 0.5
    return torch.where(torch.rand(sizes) < 0.5, -magnitudes, magnitudes)


def _binary_cases(fn: Callable, scalar_overload: object, rhs: Callable = _values) -> List[SampleCase]:
    return [
        SampleCase("odd_7x13", _Call(fn), (_values(7, 13), rhs(7, 13))),
        SampleCase("broadcast_5x1x7_3x1", _Call(fn), (_values(5, 1, 7), rhs(3, 1))),
        SampleCase("size1_1x33x1_1x1x1", _Call(fn), (_values(1, 33, 1), rhs(1, 1, 1))),
        SampleCase("rank0_4x5", _Call(fn), (_values(), rhs(4, 5))),
        SampleCase("rank6_broadcast", _Call(fn), (_values(2, 1, 3, 1, 5, 3), rhs(3, 4, 1, 3))),
        SampleCase("rank8", _Call(fn), (_values(2, 1, 2, 3, 1, 2, 1, 3), rhs(2, 1, 1, 3))),
        SampleCase("constant_rhs_13", _Call(fn, rhs(13)), (_values(7, 13),)),
        # An int Python scalar becomes an int64 constant plus a conversion that preprocess folds.
        SampleCase("int_scalar", _Call(lambda x: fn(x, 3)), (_values(7, 13),)),
        SampleCase("scalar_overload", _Call(lambda x: scalar_overload(x, 1.5)), (_values(7, 13),)),
    ]


def _alpha_cases(fn: Callable, scalar_overload: object) -> List[SampleCase]:
    return [
        SampleCase("alpha_2.5", _Call(lambda x, y: fn(x, y, alpha=2.5)), (_values(7, 13), _values(13))),
        SampleCase("scalar_overload_alpha_3", _Call(lambda x: scalar_overload(x, 1.5, 3)), (_values(33),)),
    ]


@_seeded
def _add_samples() -> List[SampleCase]:
    return (
        _binary_cases(torch.add, torch.ops.aten.add.Scalar)
        + _alpha_cases(torch.add, torch.ops.aten.add.Scalar)
        + [SampleCase("int64_broadcast", _Call(torch.add), (_ints(5, 1, 7), _ints(3, 1))),
           SampleCase("int32_alpha", _Call(lambda x, y: torch.add(x, y, alpha=3)),
                      (_ints(7, 13, dtype=torch.int32), _ints(13, dtype=torch.int32)))]
        # Over a million elements: more workgroups than one dispatch dimension may hold.
        + [SampleCase("large_1031x1031", _Call(torch.add), (_values(1031, 1031), _values(1031, 1031)))]
    )


@_seeded
def _sub_samples() -> List[SampleCase]:
    return (
        _binary_cases(torch.sub, torch.ops.aten.sub.Scalar)
        + _alpha_cases(torch.sub, torch.ops.aten.sub.Scalar)
        + [SampleCase("int64_7x13", _Call(torch.sub), (_ints(7, 13), _ints(7, 13)))]
    )


@_seeded
def _mul_samples() -> List[SampleCase]:
    return _binary_cases(torch.mul, torch.ops.aten.mul.Scalar) + [
        SampleCase("int64_rank5", _Call(torch.mul), (_ints(2, 3, 1, 5, 3), _ints(3, 1, 1))),
    ]


@_seeded
def _div_samples() -> List[SampleCase]:
    return _binary_cases(torch.div, torch.ops.aten.div.Scalar, rhs=_nonzero)


def _unary_cases(fn: Callable, prefix: str = "") -> List[SampleCase]:
    inputs = [
        ("odd_7x13x33", lambda: _values(7, 13, 33)),
        ("size1_1x1x9", lambda: _values(1, 1, 9)),
        ("rank5_2x3x1x4x5", lambda: _values(2, 3, 1, 4, 5)),
        ("rank8", lambda: _values(2, 1, 2, 1, 3, 1, 2, 3)),
        ("rank0", lambda: _values()),
        ("wide_13x33", lambda: _wide(13, 33)),
    ]
    return [SampleCase(prefix + case_id, _Call(fn), (make_input(),)) for case_id, make_input in inputs]


@_seeded
def _gelu_samples() -> List[SampleCase]:
    gelu = torch.nn.functional.gelu
    return _unary_cases(gelu) + _unary_cases(lambda x: gelu(x, approximate="tanh"), prefix="approximate_tanh_")


@_seeded
def _clamp_samples() -> List[SampleCase]:
    return [
        SampleCase("min_only_float", _Call(lambda x: torch.clamp(x, min=-0.5)), (_values(7, 13),)),
        SampleCase("max_only_int", _Call(lambda x: torch.clamp(x, max=1)), (_values(7, 13),)),
        SampleCase("min_max_float", _Call(lambda x: torch.clamp(x, -0.25, 0.75)), (_values(33, 7),)),
        SampleCase("min_max_int", _Call(lambda x: torch.clamp(x, -1, 1)), (_wide(13),)),
        SampleCase("rank5", _Call(lambda x: torch.clamp(x, -1.0, 2.0)), (_values(2, 3, 1, 5, 3),)),
        SampleCase("size1", _Call(lambda x: torch.clamp(x, min=0.0)), (_values(1, 1),)),
    ]


@_seeded
def _hardtanh_samples() -> List[SampleCase]:
    hardtanh = torch.nn.functional.hardtanh
    return [
        SampleCase("default_range", _Call(hardtanh), (_values(7, 13, scale=2.0),)),
        SampleCase("range_-2.5_0.5", _Call(lambda x: hardtanh(x, -2.5, 0.5)), (_values(33, 7, scale=2.0),)),
        SampleCase("rank5", _Call(hardtanh), (_values(2, 1, 3, 5, 3),)),
        SampleCase("size1", _Call(hardtanh), (_values(1, 9, 1),)),
    ]


@_seeded
def _mm_samples() -> List[SampleCase]:
    return [
        SampleCase("odd_7x13_13x33", _Call(torch.mm), (_values(7, 13), _values(13, 33))),
        SampleCase("size1_1x5_5x1", _Call(torch.mm), (_values(1, 5), _values(5, 1))),
        SampleCase("outer_33x1_1x7", _Call(torch.mm), (_values(33, 1), _values(1, 7))),
        SampleCase("constant_rhs", _Call(torch.mm, _values(13, 9)), (_values(7, 13),)),
        # Enough output tiles for the runtime to pick its large (64 x 64) tiles.
        SampleCase("large_tiles_721x719_719x723", _Call(torch.mm), (_values(721, 719), _values(719, 723))),
    ]


@_seeded
def _addmm_samples() -> List[SampleCase]:
    return [
        SampleCase("bias_row_33", _Call(torch.addmm), (_values(33), _values(7, 13), _values(13, 33))),
        SampleCase("bias_full_7x33", _Call(torch.addmm), (_values(7, 33), _values(7, 13), _values(13, 33))),
        SampleCase(
            "beta0.5_alpha2",
            _Call(lambda bias, a, b: torch.addmm(bias, a, b, beta=0.5, alpha=2.0)),
            (_values(1, 33), _values(7, 13), _values(13, 33)),
        ),
        SampleCase("size1_bias_1x1", _Call(torch.addmm), (_values(1, 1), _values(1, 5), _values(5, 1))),
    ]


@_seeded
def _linear_samples() -> List[SampleCase]:
    return [
        SampleCase("bias_7x13_to_33", torch.nn.Linear(13, 33), (_values(7, 13),)),
        SampleCase("no_bias_7x13_to_33", torch.nn.Linear(13, 33, bias=False), (_values(7, 13),)),
        SampleCase("rank3_input", torch.nn.Linear(13, 9), (_values(2, 5, 13),)),
        SampleCase("rank5_input", torch.nn.Linear(13, 9), (_values(2, 1, 3, 1, 13),)),
        SampleCase("rank1_input", torch.nn.Linear(13, 9), (_values(13),)),
        SampleCase("size1_1_to_1", torch.nn.Linear(1, 1), (_values(9, 1),)),
    ]


@_seeded
def _bmm_samples() -> List[SampleCase]:
    return [
        SampleCase("batch3_7x13_13x5", _Call(torch.bmm), (_values(3, 7, 13), _values(3, 13, 5))),
        SampleCase("size1_1x1x9_1x9x1", _Call(torch.bmm), (_values(1, 1, 9), _values(1, 9, 1))),
        SampleCase("outer_batch4", _Call(torch.bmm), (_values(4, 33, 1), _values(4, 1, 7))),
    ]


def _softmax_cases(fn: Callable) -> List[SampleCase]:
    return [
        SampleCase("last_dim_7x13", _Call(lambda x: fn(x, -1)), (_values(7, 13),)),
        SampleCase("dim0_7x13", _Call(lambda x: fn(x, 0)), (_values(7, 13),)),
        SampleCase("dim1_rank4", _Call(lambda x: fn(x, 1)), (_values(2, 5, 3, 7),)),
        SampleCase("size1_dim", _Call(lambda x: fn(x, 1)), (_values(5, 1),)),
        SampleCase("wide_3x33", _Call(lambda x: fn(x, -1)), (_wide(3, 33),)),
        SampleCase("rank5_dim2", _Call(lambda x: fn(x, 2)), (_wide(2, 1, 9, 2, 3),)),
    ]


@_seeded
def _view_samples() -> List[SampleCase]:
    return [
        SampleCase("7x13_to_13x7", _Call(lambda x: x.view(13, 7)), (_values(7, 13),)),
        SampleCase("flatten_2x3x5", _Call(lambda x: x.view(-1)), (_values(2, 3, 5),)),
        SampleCase("size1_dims", _Call(lambda x: x.view(5, 1, 1)), (_values(1, 1, 5),)),
        SampleCase("rank6_to_rank2", _Call(lambda x: x.view(6, 4)), (_values(2, 3, 1, 2, 1, 2),)),
        SampleCase("to_rank0", _Call(lambda x: x.view([])), (_values(1),)),
    ]


@_seeded
def _permute_samples() -> List[SampleCase]:
    return [
        SampleCase("transpose_7x13", _Call(lambda x: x.permute(1, 0)), (_values(7, 13),)),
        SampleCase("rank5", _Call(lambda x: x.permute(4, 0, 3, 1, 2)), (_values(2, 3, 1, 5, 7),)),
        SampleCase("rank8_reversed", _Call(lambda x: x.permute(7, 6, 5, 4, 3, 2, 1, 0)), (_values(2, 1, 3, 1, 2, 1, 2, 3),)),
        SampleCase("size1_dims", _Call(lambda x: x.permute(2, 0, 1)), (_values(1, 7, 1),)),
        SampleCase("int64_rank4", _Call(lambda x: x.permute(3, 1, 0, 2)), (_ints(2, 3, 5, 7),)),
        SampleCase("bool_transpose", _Call(lambda x: x.permute(1, 0)), (torch.rand(7, 13) < 0.5,)),
    ]


@_seeded
def _unsqueeze_samples() -> List[SampleCase]:
    return [
        SampleCase("dim0_7x13", _Call(lambda x: x.unsqueeze(0)), (_values(7, 13),)),
        SampleCase("dim_last", _Call(lambda x: x.unsqueeze(-1)), (_values(7, 13),)),
        SampleCase("rank7_to_rank8", _Call(lambda x: x.unsqueeze(3)), (_values(2, 1, 2, 3, 1, 2, 3),)),
        SampleCase("rank0", _Call(lambda x: x.unsqueeze(0)), (_values(),)),
    ]


@_seeded
def _squeeze_samples() -> List[SampleCase]:
    return [
        SampleCase("all_1x7x1x13", _Call(torch.squeeze), (_values(1, 7, 1, 13),)),
        SampleCase("dims_0_2", _Call(lambda x: torch.squeeze(x, (0, 2))), (_values(1, 7, 1, 1),)),
        SampleCase("overload_dim", _Call(lambda x: torch.ops.aten.squeeze_copy.dim(x, 1)), (_values(7, 1, 13),)),
        SampleCase("overload_default", _Call(torch.ops.aten.squeeze_copy.default), (_values(1, 7, 1, 13),)),
        SampleCase("rank6", _Call(lambda x: x.squeeze(4)), (_values(2, 3, 1, 2, 1, 3),)),
    ]


@_seeded
def _select_samples() -> List[SampleCase]:
    return [
        SampleCase("row_2_of_7x13", _Call(lambda x: x[2]), (_values(7, 13),)),
        SampleCase("last_column", _Call(lambda x: x[:, -1]), (_values(7, 13),)),
        SampleCase("rank5_dim3", _Call(lambda x: x.select(3, 0)), (_values(2, 3, 1, 5, 3),)),
        SampleCase("size1_dim", _Call(lambda x: x.select(1, 0)), (_values(7, 1, 13),)),
        SampleCase("int64_row", _Call(lambda x: x[3]), (_ints(7, 13),)),
    ]


@_seeded
def _slice_samples() -> List[SampleCase]:
    return [
        SampleCase("rows_1_to_5", _Call(lambda x: x[1:5]), (_values(7, 13),)),
        SampleCase("step_2", _Call(lambda x: x[:, ::2]), (_values(7, 13),)),
        SampleCase("negative_start", _Call(lambda x: x[..., -3:]), (_values(3, 5, 33),)),
        SampleCase("rank5_step_3", _Call(lambda x: x[:, :, 1:8:3]), (_values(2, 1, 9, 3, 5),)),
        SampleCase("to_size1", _Call(lambda x: x[:, 4:5]), (_values(7, 13),)),
    ]


@_seeded
def _expand_samples() -> List[SampleCase]:
    return [
        SampleCase("1x13_to_7x13", _Call(lambda x: x.expand(7, 13)), (_values(1, 13),)),
        SampleCase("middle_5x1x7", _Call(lambda x: x.expand(5, 3, 7)), (_values(5, 1, 7),)),
        SampleCase("new_leading_dim", _Call(lambda x: x.expand(2, -1, -1)), (_values(3, 33),)),
        SampleCase("rank5", _Call(lambda x: x.expand(2, 3, 4, 1, 5)), (_values(1, 3, 1, 1, 5),)),
    ]


@_seeded
def _layer_norm_samples() -> List[SampleCase]:
    return [
        SampleCase("affine_7x13", torch.nn.LayerNorm(13), (_values(7, 13),)),
        SampleCase("two_dims_3x5x7", torch.nn.LayerNorm([5, 7]), (_values(3, 5, 7),)),
        SampleCase("no_affine", torch.nn.LayerNorm(33, elementwise_affine=False), (_values(2, 9, 33),)),
        SampleCase("no_bias_rank5", torch.nn.LayerNorm(3, bias=False), (_values(2, 1, 3, 2, 3),)),
        SampleCase("size1_rows", torch.nn.LayerNorm(13), (_values(1, 1, 13),)),
        SampleCase("wide_values", torch.nn.LayerNorm(33), (_wide(4, 33),)),
    ]


@_seeded
def _clone_samples() -> List[SampleCase]:
    return [
        SampleCase("odd_7x13", _Call(torch.clone), (_values(7, 13),)),
        SampleCase("rank5", _Call(torch.clone), (_values(2, 3, 1, 5, 3),)),
        SampleCase("size1", _Call(torch.clone), (_values(1, 1, 9),)),
        SampleCase("rank0", _Call(torch.clone), (_values(),)),
        SampleCase("overload_aten_clone", _Call(torch.ops.aten.clone.default), (_values(7, 13),)),
    ]


@_seeded
def _to_copy_samples() -> List[SampleCase]:
    # ExecuTorch removes float32-to-float32 copies of activations before
    # partitioning, so what reaches the delegate are conversions of constants,
    # which preprocess folds.
    def add_as_float(x: torch.Tensor, constant: torch.Tensor) -> torch.Tensor:
        return x + constant.to(torch.float32)

    return [
        SampleCase("int64_constant_13", _Call(add_as_float, torch.arange(-6, 7)), (_values(7, 13),)),
        SampleCase("int64_constant_size1", _Call(add_as_float, torch.tensor([[[5]]])), (_values(1, 9, 1),)),
        SampleCase("bool_constant_rank5", _Call(add_as_float, torch.rand(2, 1, 3, 1, 5) < 0.5), (_values(2, 3, 3, 4, 5),)),
    ]


@_seeded
def _alias_copy_samples() -> List[SampleCase]:
    return [
        SampleCase("odd_7x13", _Call(torch.ops.aten.alias_copy.default), (_values(7, 13),)),
        SampleCase("size1", _Call(torch.ops.aten.alias_copy.default), (_values(1, 1, 3),)),
    ]


# ----------------------------------------------------------------------------
# cnn family: convolution, pooling, upsampling, normalization, cat


def _check_cat(node: Node) -> Optional[str]:
    dtypes = {val.dtype for val in [fake_tensor(item) for item in arg(node, "tensors")] + output_tensors(node)
              if val is not None}
    if len(dtypes) > 1:
        names = ", ".join(sorted(str(d).replace("torch.", "") for d in dtypes))
        return f"mixed dtypes ({names}) are not supported"
    return None


@_seeded
def _cat_samples() -> List[SampleCase]:
    cat = torch.cat
    return [
        SampleCase("dim0_two", _Call(lambda x, y: cat([x, y])), (_values(7, 13), _values(3, 13))),
        SampleCase("dim1_three", _Call(lambda x, y, z: cat([x, y, z], 1)),
                   (_values(2, 3, 5), _values(2, 1, 5), _values(2, 7, 5))),
        SampleCase("last_dim_negative", _Call(lambda x, y: cat([x, y], -1)), (_values(3, 5, 33), _values(3, 5, 1))),
        SampleCase("single_input", _Call(lambda x: cat([x], 0)), (_values(7, 13),)),
        SampleCase("rank5_dim3", _Call(lambda x, y: cat([x, y], 3)), (_values(2, 1, 3, 2, 5), _values(2, 1, 3, 4, 5))),
        SampleCase("rank8_dim7", _Call(lambda x, y: cat([x, y], 7)),
                   (_values(2, 1, 2, 1, 3, 1, 2, 3), _values(2, 1, 2, 1, 3, 1, 2, 1))),
        SampleCase("same_input_twice", _Call(lambda x: cat([x, x], 1)), (_values(1, 9),)),
        SampleCase("constant_input", _Call(lambda x, c: cat([x, c], 0), _values(2, 13)), (_values(7, 13),)),
        SampleCase("int64_dim1", _Call(lambda x, y: cat([x, y], 1)), (_ints(3, 5), _ints(3, 2))),
        SampleCase("bool_dim0", _Call(lambda x, y: cat([x, y])), (torch.rand(3, 5) < 0.5, torch.rand(1, 5) < 0.5)),
        SampleCase("int32_nchw_channels", _Call(lambda x, y: cat([x, y], 1)),
                   (_ints(2, 3, 4, 5, dtype=torch.int32), _ints(2, 1, 4, 5, dtype=torch.int32))),
    ]


def _check_convolution(node: Node) -> Optional[str]:
    rank = fake_tensor(arg(node, "input")).dim()
    if rank not in (3, 4):
        return f"{rank - 2}-D convolution is not supported (1-D and 2-D only)"
    weight = fake_tensor(arg(node, "weight"))
    if weight is None or weight.dim() != rank:
        return "the weight must be a tensor of the input's rank"
    bias = arg(node, "bias")
    if bias is not None and (fake_tensor(bias) is None or fake_tensor(bias).dim() != 1):
        return "the bias must be a 1-D tensor"
    for name in ("stride", "padding", "dilation", "output_padding"):
        if any(not isinstance(v, int) for v in arg(node, name)):
            return f"symbolic {name} is not supported"
    return None


@_seeded
def _convolution_samples() -> List[SampleCase]:
    nn = torch.nn
    return [
        SampleCase("3x3_pad1_bias_batch2", nn.Conv2d(3, 5, 3, padding=1), (_values(2, 3, 7, 9),)),
        SampleCase("stride2_dilation_asym_no_bias",
                   nn.Conv2d(4, 6, (3, 5), stride=(2, 1), padding=(1, 2), dilation=(2, 1), bias=False),
                   (_values(3, 4, 13, 11),)),
        SampleCase("groups2", nn.Conv2d(4, 6, 3, groups=2), (_values(2, 4, 7, 7),)),
        SampleCase("depthwise_3x3_s2", nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), (_values(2, 8, 9, 9),)),
        SampleCase("depthwise_multiplier2", nn.Conv2d(4, 8, 3, groups=4, bias=False), (_values(1, 4, 7, 5),)),
        SampleCase("pointwise_16_to_33", nn.Conv2d(16, 33, 1), (_values(2, 16, 7, 5),)),
        SampleCase("channels_32_7x7_s2_p3", nn.Conv2d(32, 13, 7, stride=2, padding=3), (_values(1, 32, 13, 13),)),
        SampleCase("size1_1x1_input", nn.Conv2d(3, 4, 1), (_values(1, 3, 1, 1),)),
        SampleCase("weight_input", _Call(lambda x, w: torch.nn.functional.conv2d(x, w, stride=2)),
                   (_values(2, 3, 7, 7), _values(5, 3, 3, 3))),
        SampleCase("conv1d_s2_p1", nn.Conv1d(3, 5, 3, stride=2, padding=1), (_values(2, 3, 13),)),
        SampleCase("conv1d_groups_dilation", nn.Conv1d(6, 4, 3, dilation=3, groups=2, bias=False), (_values(1, 6, 33),)),
        SampleCase("transposed_s2_outpad_groups2",
                   nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
                   (_values(2, 4, 5, 7),)),
        SampleCase("transposed_asym_dilation_no_bias",
                   nn.ConvTranspose2d(3, 5, (2, 4), stride=(1, 3), dilation=(2, 1), bias=False),
                   (_values(1, 3, 4, 5),)),
        SampleCase("transposed_1d", nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1), (_values(2, 3, 9),)),
    ]


def _check_pool_input(node: Node) -> Optional[str]:
    x = fake_tensor(arg(node, "self"))
    if x.dim() not in (3, 4):
        return f"input of rank {x.dim()}: [C, H, W] or [N, C, H, W] only"
    if x.dtype != torch.float32:
        return "the input must be float32"
    return None


def _check_pool_window(node: Node) -> Optional[str]:
    reason = _check_pool_input(node)
    if reason:
        return reason
    kernel = list(arg(node, "kernel_size"))
    padding = list(arg(node, "padding"))
    kernel = kernel * 2 if len(kernel) == 1 else kernel
    padding = padding * 2 if len(padding) == 1 else padding
    if any(2 * pad > k for pad, k in zip(padding, kernel)):
        return "padding must be at most half the kernel size"
    return None


def _check_avg_pool(node: Node) -> Optional[str]:
    if arg(node, "divisor_override") == 0:
        return "divisor_override must be non-zero"
    return _check_pool_window(node)


def _check_batch_norm(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "input")).dim() < 2:
        return "the input must have rank 2 or more"
    return None


def _check_group_norm(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "input")).dim() < 2:
        return "the input must have rank 2 or more"
    if not isinstance(arg(node, "group"), int):
        return "symbolic group count is not supported"
    return None


@_seeded
def _max_pool2d_samples() -> List[SampleCase]:
    nn = torch.nn
    return [
        SampleCase("3x3_s2_p1_batch2", nn.MaxPool2d(3, 2, 1), (_values(2, 3, 9, 9),)),
        SampleCase("2x2_default_stride_odd", nn.MaxPool2d(2), (_values(1, 4, 7, 13),)),
        SampleCase("ceil_mode_asym", nn.MaxPool2d((3, 2), stride=(2, 3), ceil_mode=True), (_values(2, 2, 8, 13),)),
        SampleCase("dilation2_pad1", nn.MaxPool2d(3, 1, 1, dilation=2), (_values(1, 3, 9, 7),)),
        SampleCase("unbatched_wide", nn.MaxPool2d(2, 2), (_wide(3, 6, 6),)),
        SampleCase("with_indices", nn.MaxPool2d(3, 2, 1, return_indices=True), (_values(2, 3, 7, 7),)),
    ]


@_seeded
def _avg_pool2d_samples() -> List[SampleCase]:
    nn = torch.nn
    return [
        SampleCase("3x3_s2_p1_include_pad", nn.AvgPool2d(3, 2, 1), (_values(2, 3, 9, 9),)),
        SampleCase("3x3_s2_p1_exclude_pad", nn.AvgPool2d(3, 2, 1, count_include_pad=False), (_values(2, 3, 9, 9),)),
        SampleCase("ceil_mode_include_pad", nn.AvgPool2d(3, 2, 1, ceil_mode=True), (_values(1, 2, 8, 10),)),
        SampleCase("ceil_mode_exclude_pad", nn.AvgPool2d((2, 3), (2, 2), (1, 1), ceil_mode=True, count_include_pad=False),
                   (_values(1, 2, 7, 13),)),
        SampleCase("divisor_override_5", nn.AvgPool2d(2, divisor_override=5), (_values(2, 3, 6, 7),)),
        SampleCase("unbatched_7x7_global", nn.AvgPool2d(7), (_values(5, 7, 7),)),
    ]


@_seeded
def _adaptive_avg_pool2d_samples() -> List[SampleCase]:
    nn = torch.nn
    return [
        SampleCase("9x9_to_3x4", nn.AdaptiveAvgPool2d((3, 4)), (_values(2, 3, 9, 9),)),
        SampleCase("13x7_to_5x3_uneven", nn.AdaptiveAvgPool2d((5, 3)), (_values(1, 2, 13, 7),)),
        SampleCase("upsampling_3x3_to_7x5", nn.AdaptiveAvgPool2d((7, 5)), (_values(1, 2, 3, 3),)),
        SampleCase("unbatched_to_2x2", nn.AdaptiveAvgPool2d(2), (_values(3, 8, 5),)),
    ]


def _batch_norm_module(channels: int, affine: bool = True, dims: int = 2) -> torch.nn.Module:
    cls = {1: torch.nn.BatchNorm1d, 2: torch.nn.BatchNorm2d}[dims]
    module = cls(channels, affine=affine, eps=1e-3)
    module.running_mean.copy_(torch.randn(channels))
    module.running_var.copy_(torch.rand(channels) + 0.5)
    if affine:
        module.weight.data.copy_(torch.randn(channels))
        module.bias.data.copy_(torch.randn(channels))
    return module.eval()


@_seeded
def _batch_norm_samples() -> List[SampleCase]:
    return [
        SampleCase("nchw_batch2_7x9", _batch_norm_module(5), (_values(2, 5, 7, 9),)),
        SampleCase("no_affine", _batch_norm_module(3, affine=False), (_values(1, 3, 13, 1),)),
        SampleCase("1d_rank2", _batch_norm_module(33, dims=1), (_values(7, 33),)),
        SampleCase("1d_rank3", _batch_norm_module(4, dims=1), (_values(2, 4, 13),)),
    ]


@_seeded
def _group_norm_samples() -> List[SampleCase]:
    nn = torch.nn
    return [
        SampleCase("2_groups_batch2", nn.GroupNorm(2, 4), (_values(2, 4, 5, 7),)),
        SampleCase("no_affine_3_groups", nn.GroupNorm(3, 6, affine=False), (_values(1, 6, 9),)),
        SampleCase("instance_like", nn.GroupNorm(5, 5), (_wide(2, 5, 3, 3),)),
        SampleCase("one_group_rank2", nn.GroupNorm(1, 13), (_values(3, 13),)),
    ]


def _check_upsample(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "input")).dim() != 4:
        return "the input must be [N, C, H, W]"
    output_size, scales = arg(node, "output_size"), arg(node, "scale_factors")
    if (output_size is None) == (scales is None):
        return "exactly one of output_size and scale_factors must be given"
    if output_size is not None and any(not isinstance(v, int) for v in output_size):
        return "symbolic output_size is not supported"
    return None


def _check_pixel_shuffle(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "self")).dim() < 3:
        return "the input must have rank 3 or more"
    return None


@_seeded
def _upsample_nearest2d_samples() -> List[SampleCase]:
    up = torch.nn.Upsample
    return [
        SampleCase("scale2_batch2", up(scale_factor=2), (_values(2, 3, 5, 7),)),
        SampleCase("size_7x9_from_5x5", up(size=(7, 9)), (_values(1, 3, 5, 5),)),
        SampleCase("scale_1.5_2.5", up(scale_factor=(1.5, 2.5)), (_values(1, 2, 5, 3),)),
        SampleCase("downsize_3x2", up(size=(3, 2)), (_values(2, 2, 7, 5),)),
        SampleCase("size1_input", up(scale_factor=3), (_values(1, 1, 1, 1),)),
    ]


@_seeded
def _upsample_bilinear2d_samples() -> List[SampleCase]:
    up = torch.nn.Upsample
    return [
        SampleCase("scale2_batch2", up(scale_factor=2, mode="bilinear"), (_values(2, 3, 5, 7),)),
        SampleCase("scale2_align_corners", up(scale_factor=2, mode="bilinear", align_corners=True), (_values(2, 3, 5, 7),)),
        SampleCase("size_7x9", up(size=(7, 9), mode="bilinear"), (_values(1, 3, 5, 5),)),
        SampleCase("size_7x9_align_corners", up(size=(7, 9), mode="bilinear", align_corners=True), (_values(1, 3, 5, 5),)),
        SampleCase("downscale_0.5", up(scale_factor=0.5, mode="bilinear"), (_values(1, 2, 13, 8),)),
        SampleCase("size1_to_1x1_align_corners", up(size=(1, 1), mode="bilinear", align_corners=True), (_values(1, 2, 3, 3),)),
        SampleCase("from_1x1", up(size=(4, 3), mode="bilinear"), (_values(2, 2, 1, 1),)),
    ]


@_seeded
def _pixel_shuffle_samples() -> List[SampleCase]:
    return [
        SampleCase("factor2_batch2", torch.nn.PixelShuffle(2), (_values(2, 8, 5, 3),)),
        SampleCase("factor3", torch.nn.PixelShuffle(3), (_values(1, 9, 2, 2),)),
        SampleCase("rank5", torch.nn.PixelShuffle(2), (_values(2, 3, 4, 3, 3),)),
        SampleCase("int64_rank3", torch.nn.PixelShuffle(2), (_ints(4, 3, 5),)),
    ]


@_seeded
def _pixel_unshuffle_samples() -> List[SampleCase]:
    return [
        SampleCase("factor2_batch2", torch.nn.PixelUnshuffle(2), (_values(2, 2, 6, 4),)),
        SampleCase("factor3", torch.nn.PixelUnshuffle(3), (_values(1, 1, 9, 3),)),
        SampleCase("rank5", torch.nn.PixelUnshuffle(2), (_values(2, 3, 1, 4, 2),)),
        SampleCase("int64_rank3", torch.nn.PixelUnshuffle(2), (_ints(1, 4, 6),)),
    ]


# ----------------------------------------------------------------------------
# The entries

_ELEMENTWISE = "Elementwise; ranks 0-8."
_BINARY = ("Elementwise with broadcasting; ranks 0-8; a Python scalar operand becomes a constant; "
           "operands of one dtype (no type promotion).")
_INT_STORAGE = " int64 and bool are stored as int32 on the GPU (int64 values must fit in int32)."


REGISTRY = OpRegistry(
    [
        OpEntry("add", (aten.add.Tensor, aten.add.Scalar), _add_samples, _BINARY + " alpha supported.",
                dtypes=NUMERIC, check=_check_binary),
        OpEntry("sub", (aten.sub.Tensor, aten.sub.Scalar), _sub_samples, _BINARY + " alpha supported.",
                dtypes=NUMERIC, check=_check_binary),
        OpEntry("mul", (aten.mul.Tensor, aten.mul.Scalar), _mul_samples, _BINARY, dtypes=NUMERIC,
                check=_check_binary),
        OpEntry(
            "div",
            (aten.div.Tensor, aten.div.Scalar),
            _div_samples,
            _BINARY + " True division only (no rounding_mode).",
            check=_check_binary,
        ),
        OpEntry("relu", (aten.relu.default,), _seeded(lambda: _unary_cases(torch.relu)), _ELEMENTWISE),
        OpEntry("sigmoid", (aten.sigmoid.default,), _seeded(lambda: _unary_cases(torch.sigmoid)), _ELEMENTWISE, kind="transcendental"),
        OpEntry("tanh", (aten.tanh.default,), _seeded(lambda: _unary_cases(torch.tanh)), _ELEMENTWISE, kind="transcendental"),
        OpEntry(
            "gelu",
            (aten.gelu.default,),
            _gelu_samples,
            _ELEMENTWISE + " approximate='none' (erf) and 'tanh'.",
            check=_check_gelu,
            kind="transcendental",
        ),
        OpEntry(
            "clamp",
            (aten.clamp.default,),
            _clamp_samples,
            _ELEMENTWISE + " min, max or both; int or float bounds.",
            check=_check_clamp,
        ),
        OpEntry("hardtanh", (aten.hardtanh.default,), _hardtanh_samples, _ELEMENTWISE),
        OpEntry("mm", (aten.mm.default,), _mm_samples, "2-D x 2-D.", kind="matmul"),
        OpEntry("addmm", (aten.addmm.default,), _addmm_samples, "beta * self + alpha * (mat1 @ mat2); self broadcasts.", kind="matmul"),
        OpEntry(
            "linear",
            (aten.linear.default,),
            _linear_samples,
            "Kept from decomposition; input of rank 1-8, 2-D weight, optional 1-D bias.",
            check=_check_linear,
            keep_undecomposed=True,
            kind="matmul",
        ),
        OpEntry("bmm", (aten.bmm.default,), _bmm_samples, "3-D x 3-D, same batch.", kind="matmul"),
        OpEntry(
            "softmax",
            (aten._softmax.default,),
            _seeded(lambda: _softmax_cases(torch.softmax)),
            "Any dim; half_to_float=False.",
            check=_check_softmax,
            kind="reduction",
        ),
        OpEntry(
            "log_softmax",
            (aten._log_softmax.default,),
            _seeded(lambda: _softmax_cases(torch.log_softmax)),
            "Any dim; half_to_float=False.",
            check=_check_softmax,
            kind="reduction",
        ),
        OpEntry(
            "view_copy",
            (aten.view_copy.default,),
            _view_samples,
            "Sizes may be symbolic (dynamic shapes)." + _INT_STORAGE,
            dtypes=ANY_DTYPE,
            aliases_input=True,
            symint_args=True,
        ),
        OpEntry("permute_copy", (aten.permute_copy.default,), _permute_samples, "Ranks 0-8." + _INT_STORAGE, dtypes=ANY_DTYPE),
        OpEntry("unsqueeze_copy", (aten.unsqueeze_copy.default,), _unsqueeze_samples, "Output rank up to 8." + _INT_STORAGE,
                dtypes=ANY_DTYPE, aliases_input=True),
        OpEntry(
            "squeeze_copy",
            (aten.squeeze_copy.dims, aten.squeeze_copy.dim, aten.squeeze_copy.default),
            _squeeze_samples,
            "All three overloads." + _INT_STORAGE,
            dtypes=ANY_DTYPE,
            aliases_input=True,
        ),
        OpEntry("select_copy", (aten.select_copy.int,), _select_samples, "Negative index allowed." + _INT_STORAGE,
                dtypes=ANY_DTYPE),
        OpEntry("slice_copy", (aten.slice_copy.Tensor,), _slice_samples,
                "Positive steps; start/end may be negative." + _INT_STORAGE, dtypes=ANY_DTYPE),
        OpEntry(
            "expand_copy",
            (aten.expand_copy.default,),
            _expand_samples,
            "-1 keeps a dim; sizes may be symbolic (dynamic shapes)." + _INT_STORAGE,
            dtypes=ANY_DTYPE,
            symint_args=True,
        ),
        OpEntry(
            "native_layer_norm",
            (aten.native_layer_norm.default,),
            _layer_norm_samples,
            "Over the last dims; weight and bias optional; also outputs mean and rstd.",
            check=_check_layer_norm,
            kind="reduction",
        ),
        OpEntry(
            "clone",
            (aten.clone.default, dim_order_ops._clone_dim_order.default),
            _clone_samples,
            "A copy; contiguous memory format / dim order only." + _INT_STORAGE,
            dtypes=ANY_DTYPE,
            check=_contiguous_layout,
            aliases_input=True,
        ),
        OpEntry(
            "to_copy",
            (aten._to_copy.default, dim_order_ops._to_dim_order_copy.default),
            _to_copy_samples,
            "float32 to float32 copies with contiguous dim order (ExecuTorch usually removes them); "
            "conversions of constants of any dtype, which preprocess folds.",
            check=_check_to_copy,
            aliases_input=True,
        ),
        OpEntry("alias_copy", (aten.alias_copy.default,), _alias_copy_samples, "A copy." + _INT_STORAGE, dtypes=ANY_DTYPE,
                aliases_input=True),
        # ---- cnn family: convolution, pooling, upsampling, normalization, cat
        OpEntry("cat", (aten.cat.default,), _cat_samples,
                "Any dim, any number of inputs, ranks 1-8; inputs of the output's dtype." + _INT_STORAGE,
                dtypes=ANY_DTYPE, check=_check_cat),
        OpEntry("convolution", (aten.convolution.default,), _convolution_samples,
                "1-D and 2-D (rank 3 or 4 input); any stride, padding, dilation, groups (depthwise too); "
                "optional bias; transposed with output_padding; any batch size. 3-D is not supported.",
                check=_check_convolution, kind="matmul"),
        OpEntry("max_pool2d_with_indices", (aten.max_pool2d_with_indices.default,), _max_pool2d_samples,
                "[C, H, W] or [N, C, H, W]; any kernel, stride, padding, dilation, ceil_mode; the int64 indices "
                "are stored as int32 on the GPU.", dtypes=FP32 | {torch.int64}, check=_check_pool_window),
        OpEntry("avg_pool2d", (aten.avg_pool2d.default,), _avg_pool2d_samples,
                "[C, H, W] or [N, C, H, W]; ceil_mode, count_include_pad both ways, divisor_override.",
                check=_check_avg_pool, kind="reduction"),
        OpEntry("adaptive_avg_pool2d", (aten._adaptive_avg_pool2d.default,), _adaptive_avg_pool2d_samples,
                "[C, H, W] or [N, C, H, W]; any output size (a 1x1 output exports as mean.dim).",
                check=_check_pool_input, kind="reduction"),
        OpEntry("batch_norm_inference", (aten._native_batch_norm_legit_no_training.default,), _batch_norm_samples,
                "Inference (running statistics), input rank >= 2, channels in dim 1; weight and bias optional.",
                check=_check_batch_norm),
        OpEntry("native_group_norm", (aten.native_group_norm.default,), _group_norm_samples,
                "Input rank >= 2, channels in dim 1; weight and bias optional; also outputs mean and rstd.",
                check=_check_group_norm, kind="reduction"),
        OpEntry("upsample_nearest2d", (aten.upsample_nearest2d.vec,), _upsample_nearest2d_samples,
                "[N, C, H, W]; output_size or scale_factors (up or down).", check=_check_upsample),
        OpEntry("upsample_bilinear2d", (aten.upsample_bilinear2d.vec,), _upsample_bilinear2d_samples,
                "[N, C, H, W]; output_size or scale_factors; align_corners both ways.", check=_check_upsample),
        OpEntry("pixel_shuffle", (aten.pixel_shuffle.default,), _pixel_shuffle_samples,
                "Kept from decomposition; rank >= 3." + _INT_STORAGE, dtypes=ANY_DTYPE,
                check=_check_pixel_shuffle, keep_undecomposed=True),
        OpEntry("pixel_unshuffle", (aten.pixel_unshuffle.default,), _pixel_unshuffle_samples,
                "Kept from decomposition; rank >= 3." + _INT_STORAGE, dtypes=ANY_DTYPE,
                check=_check_pixel_shuffle, keep_undecomposed=True),
    ]
)


def lookup(node: Node) -> Tuple[Optional[OpEntry], Optional[str]]:
    return REGISTRY.lookup(node)


def aliasing_op_names() -> FrozenSet[str]:
    """Op names whose runtime output is a view of their first argument (see OpEntry.aliases_input)."""
    return frozenset(name for entry in REGISTRY if entry.aliases_input for name in entry.op_names)


def registered_op_names() -> List[str]:
    """Every op name ("aten.add.Tensor", ...) the partitioner may put in a blob's chain."""
    return [name for entry in REGISTRY for name in entry.op_names]
