"""The single source of truth of what vkdelegate runs.

One OpEntry per op: the edge-dialect overloads it covers, the dtypes it takes,
whether the runtime can resize it for dynamic shapes, an argument check,
notes for the docs, and sample cases from which tests are generated.
The partitioner delegates a node only if `REGISTRY.lookup(node)` accepts it.
"""

import dataclasses
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

_FLOATS: FrozenSet[torch.dtype] = frozenset({torch.float32, torch.float16})

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
    # same storage) whenever both have one dtype, so memory planning keeps them
    # in one allocation. Set it exactly: a kernel's input and output must not share.
    aliases_input: bool = False
    # Int arguments may be symbolic (dynamic sizes): the runtime reads them with
    # g.get_int / g.get_int_list inside its update function, so they follow
    # every resize. Without it, a node with a symbolic int argument stays on CPU.
    symint_args: bool = False
    # Numerical kind, which picks the test tolerance against eager PyTorch:
    # "elementwise", "transcendental", "reduction" or "matmul".
    kind: str = "elementwise"
    # A preprocess pass fuses every accepted node of this op into another op (check
    # accepts only the patterns it fuses), so it never reaches the runtime, and the
    # partitioner never folds it as a constant computation (quantized weights must
    # reach their fused op packed, not folded to float32).
    fused: bool = False

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
        # pattern_reason (pt2e family): quantized patterns run only as a whole.
        reason = _check_tensors(node, entry) or entry.check(node) or pattern_reason(node)
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
    if dtype is not None and dtype not in ANY_DTYPE | {torch.float16}:
        return f"conversion to {dtype} is not supported"
    return _contiguous_layout(node)


def _dtype_names(dtypes) -> str:
    return ", ".join(sorted(str(d).replace("torch.", "") for d in dtypes))


def _tensor_dtypes(node: Node, outputs: bool = True) -> set:
    vals = [fake_tensor(item) for item in node_inputs(node)] + (output_tensors(node) if outputs else [])
    return {val.dtype for val in vals if val is not None}


def _scalar_args(node: Node) -> List[object]:
    """The Scalar-typed arguments of node (numbers, not tensors)."""
    return [arg(node, a.name) for a in node.target._schema.arguments
            if str(a.type) in ("number", "Optional[number]")]


def _check_int_scalars(node: Node, dtypes: set) -> Optional[str]:
    """Scalars with integer tensors must be integers: the runtime has no type promotion."""
    if dtypes & {torch.int32, torch.int64, torch.bool}:
        for value in _scalar_args(node):
            if value is not None and not isinstance(value, (bool, int)):
                return f"a non-integer scalar ({value}) with an integer tensor is not supported"
    return None


def _check_binary(node: Node) -> Optional[str]:
    """Tensor operands and output of one dtype (no type promotion); integer scalars with integer tensors."""
    dtypes = _tensor_dtypes(node)
    if len(dtypes) > 1:
        return f"mixed dtypes ({_dtype_names(dtypes)}) are not supported"
    return _check_int_scalars(node, dtypes)


def _check_compare(node: Node) -> Optional[str]:
    """Operands of one dtype, bool output."""
    dtypes = _tensor_dtypes(node, outputs=False)
    if len(dtypes) > 1:
        return f"mixed dtypes ({_dtype_names(dtypes)}) are not supported"
    if any(val.dtype != torch.bool for val in output_tensors(node)):
        return "the output must be bool"
    return _check_int_scalars(node, dtypes)


def _check_div(node: Node) -> Optional[str]:
    if "rounding_mode" in {a.name for a in node.target._schema.arguments}:
        mode = arg(node, "rounding_mode")
        if mode not in (None, "trunc", "floor"):
            return f"rounding_mode {mode!r} is not supported"
        if mode is None and len(_tensor_dtypes(node)) == 1 and not _tensor_dtypes(node) <= _FLOATS:
            return "true division is supported for float32 and float16 only"
    return _check_binary(node)


def _check_where(node: Node) -> Optional[str]:
    condition = fake_tensor(arg(node, "condition"))
    if condition is None or condition.dtype != torch.bool:
        return "the condition must be a bool tensor"
    dtypes = {val.dtype for val in [fake_tensor(arg(node, "self")), fake_tensor(arg(node, "other"))]
              + output_tensors(node) if val is not None}
    if len(dtypes) > 1:
        return f"mixed dtypes ({_dtype_names(dtypes)}) are not supported"
    return None


def _check_sum(node: Node) -> Optional[str]:
    """Integer and bool sums give int64 (stored as int32 like the input); no float <-> int conversion."""
    dtypes = _tensor_dtypes(node)
    if dtypes & _FLOATS and len(dtypes) > 1:
        return f"mixed dtypes ({_dtype_names(dtypes)}) are not supported"
    return None


def _check_same_dtype(node: Node) -> Optional[str]:
    dtypes = _tensor_dtypes(node)
    if len(dtypes) > 1:
        return f"mixed dtypes ({_dtype_names(dtypes)}) are not supported"
    return None


def _check_static_dim_step(node: Node) -> Optional[str]:
    """slice/select: start, end and index may be symbolic, the dim and step may not."""
    names = ("dim", "step") if "slice" in str(node.target) else ("dim",)
    for name in names:
        if isinstance(arg(node, name), Node):
            return f"a symbolic {name} is not supported"
    return None


def _check_softplus(node: Node) -> Optional[str]:
    if arg(node, "beta") == 0:
        return "softplus beta must be nonzero"
    return None


def _check_gelu(node: Node) -> Optional[str]:
    approximate = arg(node, "approximate")
    if approximate not in ("none", "tanh"):
        return f"gelu approximate={approximate!r} is not supported"
    return None


def _check_clamp(node: Node) -> Optional[str]:
    argument_names = {argument.name for argument in node.target._schema.arguments}
    if "min" in argument_names and arg(node, "min") is None and arg(node, "max") is None:
        return "clamp needs min or max"
    return _check_binary(node)


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
        # fp32mm: enough 128 x 128 tiles (256) for matmul_tiled.glsl; partial tiles, K below
        # its step of 8, unaligned (scalar path) and aligned (vec4 path) K and N.
        SampleCase("tiled_2049x5_5x2050", _Call(torch.mm), (_values(2049, 5), _values(5, 2050))),
        SampleCase("tiled_aligned_2048x12_12x2052", _Call(torch.mm), (_values(2048, 12), _values(12, 2052))),
        # mm1024: few tiles and a long K: the default splits K (matmul_tiled _sk + reduce).
        SampleCase("splitk_200x1032_1032x330", _Call(torch.mm),
                   (_values(200, 1032, scale=0.1), _values(1032, 330, scale=0.1))),
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
        # fp32mm: matmul_tiled.glsl with a bias, alpha and beta.
        SampleCase(
            "tiled_beta0.5_alpha2",
            _Call(lambda bias, a, b: torch.addmm(bias, a, b, beta=0.5, alpha=2.0)),
            (_values(2050), _values(2049, 20), _values(20, 2050)),
        ),
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
        # fp32mm: matmul_tiled.glsl with B contiguous in k (the weight), aligned and not.
        SampleCase("tiled_2052x12_to_2056", torch.nn.Linear(12, 2056), (_values(2052, 12),)),
        SampleCase("tiled_2x1030x13_to_2049", torch.nn.Linear(13, 2049, bias=False), (_values(2, 1030, 13),)),
        # mm1024: split K by default (77 tokens, a batch-1 transformer projection), K unaligned.
        SampleCase("splitk_77x1030_to_1024", torch.nn.Linear(1030, 1024), (_values(77, 1030),)),
    ]


@_seeded
def _bmm_samples() -> List[SampleCase]:
    return [
        SampleCase("batch3_7x13_13x5", _Call(torch.bmm), (_values(3, 7, 13), _values(3, 13, 5))),
        # fp32mm: matmul_tiled.glsl over 4 batches of 9 x 9 tiles.
        SampleCase("tiled_batch4_1030x12_12x1032", _Call(torch.bmm), (_values(4, 1030, 12), _values(4, 12, 1032))),
        SampleCase("size1_1x1x9_1x9x1", _Call(torch.bmm), (_values(1, 1, 9), _values(1, 9, 1))),
        SampleCase("outer_batch4", _Call(torch.bmm), (_values(4, 33, 1), _values(4, 1, 7))),
        # mm1024: split K by default over 4 batches.
        SampleCase("splitk_batch4_130x1030_1030x140", _Call(torch.bmm),
                   (_values(4, 130, 1030, scale=0.1), _values(4, 1030, 140, scale=0.1))),
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
        # transpose and t export as permute_copy.
        SampleCase("transpose_method_rank4", _Call(lambda x: x.transpose(1, -1)), (_values(2, 3, 5, 7),)),
        SampleCase("t_2d", _Call(lambda x: x.t()), (_values(7, 13),)),
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
        # With dynamic shapes, the index is a SymInt.
        SampleCase("middle_column", _Call(lambda x: x[:, x.shape[1] // 2]), (_values(7, 13),)),
    ]


@_seeded
def _slice_samples() -> List[SampleCase]:
    return [
        SampleCase("rows_1_to_5", _Call(lambda x: x[1:5]), (_values(7, 13),)),
        SampleCase("step_2", _Call(lambda x: x[:, ::2]), (_values(7, 13),)),
        SampleCase("negative_start", _Call(lambda x: x[..., -3:]), (_values(3, 5, 33),)),
        SampleCase("rank5_step_3", _Call(lambda x: x[:, :, 1:8:3]), (_values(2, 1, 9, 3, 5),)),
        SampleCase("to_size1", _Call(lambda x: x[:, 4:5]), (_values(7, 13),)),
        # narrow exports as slice_copy.
        SampleCase("narrow", _Call(lambda x: x.narrow(1, 2, 3)), (_values(3, 7, 5),)),
        # With dynamic shapes, start and end are SymInts.
        SampleCase("second_half", _Call(lambda x: x[:, x.shape[1] // 2: x.shape[1] - 1]), (_values(7, 13),)),
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
# Elementwise family samples: math, activations, comparisons, logical and bitwise
# ops, where, reductions, dtype conversions.


def _edge(*sizes: int, nan: bool = True) -> torch.Tensor:
    """_wide values with +-inf, -0.0 and (optionally) NaN mixed in."""
    values = _wide(*sizes)
    flat = values.view(-1)
    flat[3::11] = float("inf")
    flat[4::11] = float("-inf")
    flat[6::11] = -0.0
    if nan:
        flat[8::11] = float("nan")
    return values


def _positive(*sizes: int) -> torch.Tensor:
    """Magnitudes in [0.01, 10): inputs inside the domain of log, sqrt, rsqrt."""
    return torch.rand(sizes) * 10.0 + 0.01


def _bools(*sizes: int) -> torch.Tensor:
    return torch.rand(sizes) < 0.5


def _small_ints(*sizes: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    """Few distinct values: ties for comparisons and argmax."""
    return torch.randint(-3, 4, sizes, dtype=dtype)


def _math_cases(fn: Callable, domain: Callable = _values, edge: bool = True, nan: bool = True) -> List[SampleCase]:
    cases = [
        SampleCase("odd_7x13x33", _Call(fn), (domain(7, 13, 33),)),
        SampleCase("size1_1x1x9", _Call(fn), (domain(1, 1, 9),)),
        SampleCase("rank8", _Call(fn), (domain(2, 1, 2, 1, 3, 1, 2, 3),)),
        SampleCase("rank0", _Call(fn), (domain(),)),
        SampleCase("wide_13x33", _Call(fn), (_wide(13, 33),)),
    ]
    if edge:
        cases.append(SampleCase("edge_values_9x11", _Call(fn), (_edge(9, 11, nan=nan),)))
    return cases


def _int_cases(fn: Callable) -> List[SampleCase]:
    return [
        SampleCase("int64_7x13", _Call(fn), (_ints(7, 13),)),
        SampleCase("int32_rank5", _Call(fn), (_ints(2, 3, 1, 5, 3, dtype=torch.int32),)),
    ]


@_seeded
def _div_mode_samples() -> List[SampleCase]:
    def div(mode):
        return lambda a, b: torch.div(a, b, rounding_mode=mode)

    def nonzero_ints(*sizes):
        values = _ints(*sizes)
        return torch.where(values == 0, torch.ones_like(values), values)

    return [
        SampleCase("floor_7x13", _Call(div("floor")), (_values(7, 13, scale=10.0), _nonzero(7, 13))),
        SampleCase("trunc_broadcast", _Call(div("trunc")), (_values(5, 1, 7, scale=10.0), _nonzero(3, 1))),
        SampleCase("floor_int64", _Call(div("floor")), (_ints(7, 13), nonzero_ints(7, 13))),
        SampleCase("trunc_int32_broadcast", _Call(div("trunc")),
                   (_ints(2, 3, 5, dtype=torch.int32), nonzero_ints(5).to(torch.int32))),
        SampleCase("floor_operator_int", _Call(lambda a, b: a // b), (_ints(33), nonzero_ints(33))),
        SampleCase("floor_by_zero", _Call(div("floor")), (_values(13), torch.zeros(13))),
        SampleCase("none_mode", _Call(div(None)), (_values(7, 13), _nonzero(7, 13))),
    ]


@_seeded
def _pow_samples() -> List[SampleCase]:
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, float("inf"), float("-inf"), float("nan"), 3.0])
    return [
        SampleCase("tensor_positive_base", _Call(torch.pow), (_positive(7, 13), _values(7, 13))),
        SampleCase("tensor_broadcast_int_exponents", _Call(torch.pow),
                   (_values(5, 1, 7), torch.randint(-3, 4, (3, 1)).float())),
        SampleCase("tensor_special_pairs", _Call(torch.pow),
                   (special.view(11, 1), special.view(1, 11))),
        SampleCase("tensor_negative_base_fraction", _Call(torch.pow), (_values(33), torch.full((33,), 0.5))),
        SampleCase("square", _Call(lambda x: x ** 2), (_wide(7, 13),)),
        SampleCase("cube_rank5", _Call(lambda x: x ** 3), (_values(2, 3, 1, 5, 3),)),
        SampleCase("half_power", _Call(lambda x: torch.pow(x, 0.5)), (_values(7, 13),)),
        SampleCase("negative_power", _Call(lambda x: torch.pow(x, -1.5)), (_positive(7, 13),)),
        SampleCase("scalar_base", _Call(lambda x: torch.pow(2.0, x)), (_values(7, 13, scale=4.0),)),
        SampleCase("scalar_base_edge", _Call(lambda x: torch.pow(2.0, x)), (_edge(9, 11),)),
        SampleCase("int64_tensor", _Call(torch.pow), (_small_ints(7, 13), torch.randint(0, 5, (7, 13)))),
        SampleCase("int64_square", _Call(lambda x: x ** 2), (_ints(7, 13),)),
    ]


def _minmax_cases(fn: Callable) -> List[SampleCase]:
    return [
        SampleCase("odd_7x13", _Call(fn), (_values(7, 13), _values(7, 13))),
        SampleCase("broadcast_5x1x7_3x1", _Call(fn), (_values(5, 1, 7), _values(3, 1))),
        SampleCase("rank8", _Call(fn), (_values(2, 1, 2, 3, 1, 2, 1, 3), _values(2, 1, 1, 3))),
        SampleCase("edge_values", _Call(fn), (_edge(9, 11), _edge(9, 11).flip(0))),
        SampleCase("int64_broadcast", _Call(fn), (_ints(5, 1, 7), _ints(3, 1))),
        SampleCase("constant_rhs", _Call(fn, _values(13)), (_values(7, 13),)),
    ]


def _named(fn: Callable, cases: List[SampleCase]) -> List[SampleCase]:
    """Cases of one entry that covers several functions: ids prefixed with the function's name."""
    return [SampleCase(f"{fn.__name__}_{case.case_id}", case.module, case.inputs) for case in cases]


def _compare_cases(fn: Callable) -> List[SampleCase]:
    ties = _small_ints(7, 13).float()
    return [
        SampleCase("ties_7x13", _Call(fn), (ties, _small_ints(7, 13).float())),
        SampleCase("broadcast_5x1x7_3x1", _Call(fn), (_small_ints(5, 1, 7).float(), _small_ints(3, 1).float())),
        SampleCase("rank8", _Call(fn), (_values(2, 1, 2, 3, 1, 2, 1, 3), _values(2, 1, 1, 3))),
        SampleCase("edge_values", _Call(fn), (_edge(9, 11), _edge(9, 11).flip(1))),
        SampleCase("int64_ties", _Call(fn), (_small_ints(7, 13), _small_ints(13))),
        SampleCase("int32", _Call(fn), (_small_ints(33, dtype=torch.int32), _small_ints(33, dtype=torch.int32))),
        SampleCase("bool", _Call(fn), (_bools(7, 13), _bools(7, 13))),
        SampleCase("scalar_float", _Call(lambda x: fn(x, 0.5)), (_edge(9, 11),)),
        SampleCase("scalar_zero", _Call(lambda x: fn(x, 0)), (_small_ints(7, 13).float(),)),
        SampleCase("scalar_int64", _Call(lambda x: fn(x, 1)), (_small_ints(7, 13),)),
    ]


def _logical_cases(fn: Callable) -> List[SampleCase]:
    return [
        SampleCase("bool_7x13", _Call(fn), (_bools(7, 13), _bools(7, 13))),
        SampleCase("bool_broadcast", _Call(fn), (_bools(5, 1, 7), _bools(3, 1))),
        SampleCase("float_with_zeros", _Call(fn), (_small_ints(7, 13).float(), _edge(7, 13))),
        SampleCase("int64", _Call(fn), (_small_ints(33), _small_ints(33))),
    ]


def _bitwise_cases(fn: Callable) -> List[SampleCase]:
    return [
        SampleCase("int64_7x13", _Call(fn), (_ints(7, 13), _ints(7, 13))),
        SampleCase("int32_broadcast", _Call(fn), (_ints(5, 1, 7, dtype=torch.int32), _ints(3, 1, dtype=torch.int32))),
        SampleCase("bool", _Call(fn), (_bools(7, 13), _bools(7, 13))),
    ]


def _not_samples(fn: Callable, floats: bool) -> Callable[[], List[SampleCase]]:
    @_seeded
    def samples() -> List[SampleCase]:
        cases = [
            SampleCase("bool_7x13", _Call(fn), (_bools(7, 13),)),
            SampleCase("int64_rank5", _Call(fn), (_small_ints(2, 3, 1, 5, 3),)),
            SampleCase("int32", _Call(fn), (_ints(33, dtype=torch.int32),)),
        ]
        if floats:
            cases.append(SampleCase("float_edge", _Call(fn), (_edge(9, 11),)))
        return cases

    return samples


@_seeded
def _where_samples() -> List[SampleCase]:
    return [
        SampleCase("same_shape_7x13", _Call(torch.where), (_bools(7, 13), _values(7, 13), _values(7, 13))),
        SampleCase("broadcast_all_three", _Call(torch.where), (_bools(5, 1, 7), _values(3, 1), _values(1, 5, 1, 1))),
        SampleCase("from_comparison", _Call(lambda x, y: torch.where(x > y, x, y)), (_edge(9, 11), _values(11))),
        SampleCase("rank8", _Call(torch.where), (_bools(2, 1, 2, 3, 1, 2, 1, 3), _values(2, 1, 1, 3), _values(3))),
        SampleCase("int64", _Call(torch.where), (_bools(7, 13), _ints(7, 13), _ints(13))),
        SampleCase("bool_values", _Call(torch.where), (_bools(33), _bools(33), _bools(1))),
        SampleCase("constant_other", _Call(torch.where, _values(13)), (_bools(7, 13), _values(7, 13))),
    ]


@_seeded
def _clamp_int_samples() -> List[SampleCase]:
    return [
        SampleCase("int64_min_max", _Call(lambda x: torch.clamp(x, -100, 100)), (_ints(7, 13),)),
        SampleCase("int32_min_only", _Call(lambda x: torch.clamp(x, min=0)), (_ints(33, dtype=torch.int32),)),
        SampleCase("int64_max_only", _Call(lambda x: torch.clamp(x, max=-5)), (_ints(2, 3, 1, 5),)),
        SampleCase("float_edge", _Call(lambda x: torch.clamp(x, -1.0, 1.0)), (_edge(9, 11),)),
    ]


def _reduce_cases(fn: Callable, ints: bool = True) -> List[SampleCase]:
    cases = [
        SampleCase("all_dims_7x13", _Call(lambda x: fn(x, None, False)), (_values(7, 13),)),
        SampleCase("dim_last_keepdim", _Call(lambda x: fn(x, -1, True)), (_values(7, 13, 33),)),
        SampleCase("dim0", _Call(lambda x: fn(x, 0, False)), (_values(33, 7),)),
        SampleCase("dims_0_2_rank4", _Call(lambda x: fn(x, (0, 2), False)), (_values(3, 5, 7, 2),)),
        SampleCase("dims_1_3_keepdim", _Call(lambda x: fn(x, (1, 3), True)), (_values(2, 5, 3, 7),)),
        SampleCase("rank8_dims_1_4_7", _Call(lambda x: fn(x, (1, 4, 7), False)), (_values(2, 3, 1, 2, 3, 1, 2, 3),)),
        SampleCase("size1_dim", _Call(lambda x: fn(x, 1, False)), (_values(7, 1, 13),)),
        SampleCase("long_row_1x1031", _Call(lambda x: fn(x, 1, False)), (_wide(2, 1031),)),
        SampleCase("rank0", _Call(lambda x: fn(x, None, False)), (_values(),)),
        SampleCase("edge_values", _Call(lambda x: fn(x, 1, False)), (_edge(9, 11),)),
    ]
    if ints:
        cases += [
            SampleCase("int64_dim1", _Call(lambda x: fn(x, 1, False)), (_ints(7, 13),)),
            SampleCase("int32_all", _Call(lambda x: fn(x, None, True)), (_ints(5, 7, dtype=torch.int32),)),
        ]
    return cases


def _dims_or_all(dim):
    return [] if dim is None else dim


@_seeded
def _sum_samples() -> List[SampleCase]:
    return _reduce_cases(lambda x, dim, keepdim: torch.sum(x, _dims_or_all(dim), keepdim)) + [
        SampleCase("bool_count", _Call(lambda x: x.sum(0)), (_bools(7, 13),)),
        SampleCase("no_dim_arg", _Call(torch.sum), (_values(5, 9),)),
    ]


@_seeded
def _mean_samples() -> List[SampleCase]:
    return _reduce_cases(lambda x, dim, keepdim: torch.mean(x, _dims_or_all(dim), keepdim), ints=False) + [
        SampleCase("no_dim_arg", _Call(torch.mean), (_values(5, 9),)),
    ]


def _minmax_reduce_samples(fn: Callable) -> Callable[[], List[SampleCase]]:
    @_seeded
    def samples() -> List[SampleCase]:
        return _reduce_cases(lambda x, dim, keepdim: fn(x, _dims_or_all(dim), keepdim)) + [
            SampleCase("ties_float", _Call(lambda x: fn(x, 1)), (_small_ints(7, 13).float(),)),
        ]

    return samples


def _arg_reduce_samples(fn: Callable) -> Callable[[], List[SampleCase]]:
    @_seeded
    def samples() -> List[SampleCase]:
        def on_dim(x, dim, keepdim):
            return fn(x, dim[0] if isinstance(dim, tuple) else dim, keepdim)

        cases = [case for case in _reduce_cases(on_dim) if "dims_" not in case.case_id]
        return cases + [
            SampleCase("ties_float_dim1", _Call(lambda x: fn(x, 1)), (_small_ints(7, 13).float(),)),
            SampleCase("ties_int64_dim0", _Call(lambda x: fn(x, 0)), (_small_ints(33, 7),)),
            SampleCase("ties_flattened", _Call(lambda x: fn(x)), (_small_ints(5, 9).float(),)),
            SampleCase("all_nan_and_inf", _Call(lambda x: fn(x, 0)),
                       (torch.tensor([[float("nan"), float("inf")], [float("nan"), float("-inf")]]),)),
        ]

    return samples


def _max_dim_samples(fn: Callable) -> Callable[[], List[SampleCase]]:
    @_seeded
    def samples() -> List[SampleCase]:
        return [
            SampleCase("dim1_7x13", _Call(lambda x: tuple(fn(x, 1))), (_values(7, 13),)),
            SampleCase("dim0_keepdim_ties", _Call(lambda x: tuple(fn(x, 0, True))), (_small_ints(33, 7).float(),)),
            SampleCase("rank5_dim_minus2", _Call(lambda x: tuple(fn(x, -2))), (_edge(2, 3, 1, 11, 3),)),
            SampleCase("int64_dim1", _Call(lambda x: tuple(fn(x, 1))), (_small_ints(7, 13),)),
        ]

    return samples


@_seeded
def _var_samples() -> List[SampleCase]:
    return _reduce_cases(lambda x, dim, keepdim: torch.var(x, dim, keepdim=keepdim), ints=False) + [
        SampleCase("correction_0", _Call(lambda x: torch.var(x, 1, correction=0)), (_values(7, 13),)),
        SampleCase("std_dim1", _Call(lambda x: torch.std(x, 1)), (_values(7, 13),)),
        SampleCase("single_element_rows", _Call(lambda x: torch.var(x, 1)), (_values(7, 1),)),
    ]


@_seeded
def _convert_samples() -> List[SampleCase]:
    def to(dtype):
        return lambda x: x.to(dtype)

    return [
        SampleCase("float_to_int64", _Call(to(torch.int64)), (_values(7, 13, scale=100.0),)),
        SampleCase("float_to_int32_rank5", _Call(to(torch.int32)), (_values(2, 3, 1, 5, 3, scale=50.0),)),
        SampleCase("float_to_bool", _Call(to(torch.bool)), (_edge(9, 11),)),
        SampleCase("int64_to_float", _Call(to(torch.float32)), (_ints(7, 13),)),
        SampleCase("int64_to_int32", _Call(to(torch.int32)), (_ints(7, 13),)),
        SampleCase("int32_to_int64", _Call(to(torch.int64)), (_ints(33, dtype=torch.int32),)),
        SampleCase("int64_to_bool", _Call(to(torch.bool)), (_small_ints(7, 13),)),
        SampleCase("bool_to_float", _Call(to(torch.float32)), (_bools(7, 13),)),
        SampleCase("bool_to_int64", _Call(to(torch.int64)), (_bools(1, 9, 1),)),
        SampleCase("mask_arithmetic", _Call(lambda x: x * (x > 0).float()), (_values(7, 13),)),
        # fp16 family: to and from float16 (NaN and inf convert; magnitudes above 65504 become inf).
        SampleCase("float_to_float16", _Call(to(torch.float16)), (_edge(7, 13) * 1000.0,)),
        SampleCase("float16_to_float_rank5", _Call(to(torch.float32)), (_edge(2, 3, 1, 5, 3).half(),)),
        SampleCase("float16_to_int64", _Call(to(torch.int64)), (_values(7, 13, scale=100.0).half(),)),
        SampleCase("int64_to_float16", _Call(to(torch.float16)), (_ints(7, 13) * 100,)),
        SampleCase("float16_to_bool", _Call(to(torch.bool)), (_edge(9, 11).half(),)),
        SampleCase("bool_to_float16", _Call(to(torch.float16)), (_bools(1, 9, 1),)),
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
        # 16 or more output channels per group: the implicit-GEMM kernel.
        SampleCase("gemm_3x3_s2_p2_dilation2", nn.Conv2d(8, 67, 3, stride=2, padding=2, dilation=2),
                   (_values(2, 8, 13, 11),)),
        SampleCase("gemm_groups2_pointwise_no_bias", nn.Conv2d(6, 32, 1, groups=2, bias=False), (_values(3, 6, 9, 9),)),
        SampleCase("gemm_k_over_16_asym", nn.Conv2d(7, 16, (3, 2), stride=(1, 2), padding=(1, 0)), (_values(1, 7, 9, 17),)),
        SampleCase("gemm_conv1d", nn.Conv1d(5, 20, 5, padding=2), (_values(2, 5, 33),)),
    ]


# ----------------------------------------------------------------------------
# perf family: convolution with a fused clamp (backends/fuse_conv.py makes it
# from conv + relu / hardtanh / clamp)


def _conv2d_clamp_reference(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
                            min, max, residual=None):
    out = torch.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    if residual is not None:
        out = out + residual
    return torch.clamp(out, min, max)


@functools.lru_cache(maxsize=None)
def conv2d_clamp_op():
    """`et_vk.vkd_conv2d_clamp.default`: convolution, plus an optional residual of the output's
    sizes, then clamp to [min, max] (inf for no bound)."""
    from vkdelegate.quant.library import define

    define("vkd_conv2d_clamp(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
           "int[] dilation, bool transposed, int[] output_padding, int groups, float min, float max, "
           "Tensor? residual=None) -> Tensor",
           _conv2d_clamp_reference)
    return torch.ops.et_vk.vkd_conv2d_clamp.default


def _check_conv2d_clamp(node: Node) -> Optional[str]:
    if arg(node, "transposed"):
        return "transposed convolution with a fused clamp is not supported"
    if not arg(node, "min") <= arg(node, "max"):
        return "min must not exceed max"
    residual = arg(node, "residual")
    if residual is not None and tuple(fake_tensor(residual).shape) != tuple(output_tensors(node)[0].shape):
        return "the residual must have the output's sizes"
    return _check_convolution(node)


class _ConvClamp(torch.nn.Module):
    def __init__(self, conv: torch.nn.Module, low: float, high: float):
        super().__init__()
        self.conv, self.low, self.high = conv, low, high

    def forward(self, x, residual=None):
        c = self.conv
        return conv2d_clamp_op()(x, c.weight, c.bias, list(c.stride), list(c.padding), list(c.dilation), False,
                                 [0] * len(c.stride), c.groups, self.low, self.high, residual)


@_seeded
def _conv2d_clamp_samples() -> List[SampleCase]:
    nn, inf = torch.nn, float("inf")
    return [
        # The direct kernels (fewer than 16 channels per group), relu and relu6 bounds.
        SampleCase("direct_3x3_relu_batch2", _ConvClamp(nn.Conv2d(3, 5, 3, padding=1), 0.0, inf),
                   (_values(2, 3, 7, 9),)),
        SampleCase("depthwise_s2_relu6", _ConvClamp(nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), 0.0, 6.0),
                   (_values(1, 8, 9, 9, scale=4.0),)),
        SampleCase("conv1d_clamp_no_bias", _ConvClamp(nn.Conv1d(3, 5, 3, bias=False), -0.5, 0.25),
                   (_values(2, 3, 13),)),
        # The implicit-GEMM kernels: wide tiles at larger batch, split-K tiles at batch 1.
        SampleCase("gemm_batch4_relu", _ConvClamp(nn.Conv2d(8, 67, 3, padding=1), 0.0, inf),
                   (_values(4, 8, 13, 11),)),
        SampleCase("gemm_pointwise_min_only", _ConvClamp(nn.Conv2d(33, 40, 1), -0.1, inf), (_values(1, 33, 7, 5),)),
        SampleCase("gemm_3x3_s2_hardtanh", _ConvClamp(nn.Conv2d(20, 33, 3, stride=2, padding=1), -1.0, 1.0),
                   (_values(1, 20, 13, 9),)),
        # A residual added before the clamp (ResNet's conv + add + relu).
        SampleCase("gemm_residual_relu", _ConvClamp(nn.Conv2d(16, 17, 3, padding=1), 0.0, inf),
                   (_values(1, 16, 9, 7), _values(1, 17, 9, 7))),
        SampleCase("direct_residual_no_bound", _ConvClamp(nn.Conv2d(3, 4, 3, padding=1), -inf, inf),
                   (_values(2, 3, 5, 7), _values(2, 4, 5, 7))),
    ]


def _check_pool_input(node: Node) -> Optional[str]:
    x = fake_tensor(arg(node, "self"))
    if x.dim() not in (3, 4):
        return f"input of rank {x.dim()}: [C, H, W] or [N, C, H, W] only"
    if x.dtype not in _FLOATS:
        return "the input must be float32 or float16"
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


def _check_grid_sampler(node: Node) -> Optional[str]:
    if arg(node, "interpolation_mode") not in (0, 1):
        return "only bilinear and nearest interpolation are supported (not bicubic)"
    if arg(node, "padding_mode") not in (0, 1, 2):
        return f"unknown padding mode {arg(node, 'padding_mode')}"
    return None


@_seeded
def _grid_sampler_samples() -> List[SampleCase]:
    def sampler(mode: str, padding: str, align_corners: bool) -> torch.nn.Module:
        return _Call(lambda x, grid: torch.nn.functional.grid_sample(
            x, grid, mode=mode, padding_mode=padding, align_corners=align_corners))

    cases = []
    for mode in ("bilinear", "nearest"):
        for padding in ("zeros", "border", "reflection"):
            for align_corners in (False, True):
                # Grid values past [-1, 1] exercise the padding modes.
                cases.append(SampleCase(f"{mode}_{padding}_align{int(align_corners)}",
                                        sampler(mode, padding, align_corners),
                                        (_values(2, 3, 5, 7), torch.rand(2, 4, 9, 2) * 3.0 - 1.5)))
    cases.append(SampleCase("size1_input", sampler("bilinear", "reflection", True),
                            (_values(1, 2, 1, 1), torch.rand(1, 3, 3, 2) * 2.0 - 1.0)))
    return cases


# ----------------------------------------------------------------------------
# Transformer family: shape and data movement, indexing, creation, embedding,
# scaled_dot_product_attention, rms_norm.

_INDEX_DTYPES = (torch.int32, torch.int64)
_F = torch.nn.functional


def _index_dtype(node: Node, name: str) -> Optional[str]:
    val = fake_tensor(arg(node, name))
    if val is not None and val.dtype not in _INDEX_DTYPES:
        return f"{name} must be int32 or int64, not {str(val.dtype).replace('torch.', '')}"
    return None


def _check_index_select(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "self")).dim() == 0:
        return "index_select of a 0-d tensor is not supported"
    if fake_tensor(arg(node, "index")).dim() > 1:
        return "index_select needs a 0-d or 1-D index"
    return _index_dtype(node, "index")


def _check_gather(node: Node) -> Optional[str]:
    self_rank, index_rank = fake_tensor(arg(node, "self")).dim(), fake_tensor(arg(node, "index")).dim()
    if max(self_rank, 1) != max(index_rank, 1):
        return "gather needs an index of the input's rank"
    return _index_dtype(node, "index")


def _check_embedding(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "weight")).dim() != 2:
        return "embedding weight must be 2-D"
    return _index_dtype(node, "indices")


def _check_index_tensor(node: Node) -> Optional[str]:
    indices = [item for item in arg(node, "indices") if item is not None]
    if not indices:
        return "index needs at least one index tensor"
    if len(indices) > 4:
        return f"{len(indices)} index tensors; at most 4 are supported"
    for item in indices:
        val = fake_tensor(item)
        if val is None or val.dtype not in _INDEX_DTYPES:
            return "only int32/int64 index tensors are supported (boolean masks have data-dependent shapes)"
    return None


def _check_unfold(node: Node) -> Optional[str]:
    if fake_tensor(arg(node, "self")).dim() == 0:
        return "unfold of a 0-d tensor is not supported"
    return None


def _int_fill_value(node: Node, name: str) -> Optional[str]:
    """Integer outputs are int32 on the GPU: the fill value must fit."""
    value = arg(node, name)
    if output_tensors(node)[0].dtype != torch.float32 and not -2**31 <= value < 2**31:
        return f"{name} {value} does not fit in int32"
    return None


def _check_full(node: Node) -> Optional[str]:
    return _int_fill_value(node, "fill_value")


def _check_fill_like(node: Node) -> Optional[str]:
    return _int_fill_value(node, "fill_value") or _contiguous_layout(node)


def _check_constant_pad(node: Node) -> Optional[str]:
    return _int_fill_value(node, "value")


def _check_arange(node: Node) -> Optional[str]:
    if output_tensors(node)[0].dtype == torch.bool:
        return "arange of bool is not supported"
    return None


def _check_sdpa(node: Node) -> Optional[str]:
    q, k, v = (fake_tensor(arg(node, name)) for name in ("query", "key", "value"))
    if any(t is None or t.dtype not in _FLOATS for t in (q, k, v)):
        return "query, key and value must be float32 or float16"
    if arg(node, "dropout_p") != 0.0:
        return "dropout_p must be 0 (inference only)"
    rank = q.dim()
    if rank < 2 or k.dim() != rank or v.dim() != rank:
        return "query, key and value need one rank of at least 2"
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2]:
        return "key and value do not fit query"
    if q.shape[-1] > 256 or v.shape[-1] > 256:
        return "head dims above 256 are not supported"
    for d in range(rank - 2):
        if k.shape[d] != v.shape[d]:
            return "key and value lead dims differ"
        if k.shape[d] != q.shape[d]:
            gqa = d == rank - 3 and arg(node, "enable_gqa") and k.shape[d] > 0 and q.shape[d] % k.shape[d] == 0
            if not gqa:
                return f"key {list(k.shape)} does not match query {list(q.shape)} (no broadcasting of lead dims)"
    mask = arg(node, "attn_mask")
    if mask is not None:
        if arg(node, "is_causal"):
            return "attn_mask and is_causal together are not supported"
        m = fake_tensor(mask)
        if m is None or m.dtype not in _FLOATS | {torch.bool}:
            return "attn_mask must be float or bool"
        full = list(q.shape[:-1]) + [k.shape[-2]]
        if m.dim() > rank or any(a not in (1, b) for a, b in zip(reversed(m.shape), reversed(full))):
            return f"attn_mask {list(m.shape)} does not broadcast to {full}"
    return None


def _check_rms_norm(node: Node) -> Optional[str]:
    shape = arg(node, "normalized_shape")
    x = fake_tensor(arg(node, "input"))
    if not shape or len(shape) > x.dim() or list(x.shape[x.dim() - len(shape):]) != list(shape):
        return "normalized_shape must name the input's last dims"
    return None


def _bools(*sizes: int) -> torch.Tensor:
    return torch.rand(sizes) < 0.5


@_seeded
def _split_samples() -> List[SampleCase]:
    return [
        SampleCase("sizes_2_4_1_dim1", _Call(lambda x: torch.split(x, [2, 4, 1], 1)), (_values(3, 7, 5),)),
        SampleCase("equal_chunks_last_dim", _Call(lambda x: torch.split(x, 3, -1)), (_values(2, 5, 13),)),
        SampleCase("chunk_rank6", _Call(lambda x: torch.chunk(x, 2, 0)), (_values(4, 1, 2, 3, 1, 3),)),
        SampleCase("int64_size1_parts", _Call(lambda x: torch.split(x, 1, 0)), (_ints(3, 7),)),
        SampleCase("bool_unbalanced", _Call(lambda x: torch.split(x, [1, 6], 1)), (_bools(2, 7),)),
    ]


@_seeded
def _repeat_samples() -> List[SampleCase]:
    return [
        SampleCase("2x3_of_7x13", _Call(lambda x: x.repeat(2, 3)), (_values(7, 13),)),
        SampleCase("new_dims", _Call(lambda x: x.repeat(2, 1, 3, 1)), (_values(5, 7),)),
        SampleCase("size1_and_ones", _Call(lambda x: x.repeat(1, 1, 1)), (_values(1, 9, 1),)),
        SampleCase("rank8", _Call(lambda x: x.repeat(1, 2, 1, 1, 2, 1, 1, 2)), (_values(2, 1, 2, 3, 1, 2, 1, 3),)),
        SampleCase("int64", _Call(lambda x: x.repeat(3, 1)), (_ints(2, 5),)),
        SampleCase("bool", _Call(lambda x: x.repeat(2, 2)), (_bools(3, 3),)),
    ]


@_seeded
def _flip_samples() -> List[SampleCase]:
    return [
        SampleCase("dim0_7x13", _Call(lambda x: x.flip(0)), (_values(7, 13),)),
        SampleCase("dims_0_2_rank3", _Call(lambda x: x.flip(0, -1)), (_values(3, 5, 7),)),
        SampleCase("rank8_all", _Call(lambda x: x.flip(list(range(8)))), (_values(2, 1, 2, 3, 1, 2, 1, 3),)),
        SampleCase("size1_dim", _Call(lambda x: x.flip(1)), (_values(7, 1, 3),)),
        SampleCase("int64", _Call(lambda x: x.flip(1)), (_ints(4, 9),)),
        SampleCase("bool", _Call(lambda x: x.flip(0)), (_bools(5, 3),)),
    ]


@_seeded
def _pad_samples() -> List[SampleCase]:
    pad = _F.pad
    return [
        SampleCase("last_dim_1_2", _Call(lambda x: pad(x, (1, 2))), (_values(7, 13),)),
        SampleCase("two_dims_value", _Call(lambda x: pad(x, (0, 1, 3, 2), value=-1.5)), (_values(2, 5, 7),)),
        SampleCase("negative_crops", _Call(lambda x: pad(x, (-1, 2, 1, -2))), (_values(3, 7, 9),)),
        SampleCase("rank5_three_dims", _Call(lambda x: pad(x, (1, 1, 0, 2, 2, 0))), (_values(2, 1, 3, 4, 5),)),
        SampleCase("size1", _Call(lambda x: pad(x, (3, 3))), (_values(1, 1),)),
        SampleCase("int64_value", _Call(lambda x: pad(x, (2, 0), value=7)), (_ints(3, 5),)),
        SampleCase("neg_inf", _Call(lambda x: pad(x, (1, 1), value=float("-inf"))), (_values(4, 6),)),
    ]


@_seeded
def _roll_samples() -> List[SampleCase]:
    return [
        SampleCase("dim1_by_2", _Call(lambda x: x.roll(2, 1)), (_values(3, 7),)),
        SampleCase("flat_by_-3", _Call(lambda x: x.roll(-3)), (_values(5, 4),)),
        SampleCase("two_dims", _Call(lambda x: x.roll((1, -2), (0, 2))), (_values(3, 2, 5),)),
        SampleCase("shift_beyond_size", _Call(lambda x: x.roll(15, -1)), (_values(2, 1, 13),)),
        SampleCase("same_dim_twice_rank8", _Call(lambda x: x.roll((1, 2), (3, 3))), (_values(2, 1, 2, 3, 1, 2, 1, 3),)),
        SampleCase("int64", _Call(lambda x: x.roll(1, 0)), (_ints(4, 3),)),
        SampleCase("bool", _Call(lambda x: x.roll(-1, 1)), (_bools(3, 4),)),
    ]


@_seeded
def _unfold_samples() -> List[SampleCase]:
    return [
        SampleCase("size3_step2_last", _Call(lambda x: x.unfold(-1, 3, 2)), (_values(2, 5, 13),)),
        SampleCase("dim0_size2_step1", _Call(lambda x: x.unfold(0, 2, 1)), (_values(7, 3),)),
        SampleCase("step_larger_than_size", _Call(lambda x: x.unfold(1, 2, 5)), (_values(3, 13),)),
        SampleCase("whole_dim", _Call(lambda x: x.unfold(1, 7, 1)), (_values(2, 7, 1),)),
        SampleCase("rank1", _Call(lambda x: x.unfold(0, 4, 3)), (_values(33),)),
        SampleCase("int64", _Call(lambda x: x.unfold(1, 3, 3)), (_ints(2, 9),)),
    ]


@_seeded
def _index_select_samples() -> List[SampleCase]:
    return [
        SampleCase("dim1_repeats", _Call(lambda x, i: x.index_select(1, i)), (_values(7, 13), torch.tensor([0, 12, 3, 3, 5]))),
        SampleCase("dim0_rank5", _Call(lambda x, i: x.index_select(0, i)), (_values(3, 2, 1, 4, 5), torch.tensor([2, 0]))),
        SampleCase("negative_dim", _Call(lambda x, i: x.index_select(-1, i)), (_values(2, 5, 9), torch.randint(0, 9, (13,)))),
        SampleCase("int32_index", _Call(lambda x, i: x.index_select(0, i)), (_values(9, 3), torch.tensor([8, 1, 4], dtype=torch.int32))),
        SampleCase("int64_values", _Call(lambda x, i: x.index_select(1, i)), (_ints(4, 6), torch.tensor([5, 0]))),
        SampleCase("constant_index", _Call(lambda x, i: x.index_select(1, i), torch.tensor([1, 1, 0])), (_values(3, 2),)),
    ]


@_seeded
def _gather_samples() -> List[SampleCase]:
    return [
        SampleCase("dim1_7x13", _Call(lambda x, i: x.gather(1, i)), (_values(7, 13), torch.randint(0, 13, (7, 5)))),
        SampleCase("dim0_smaller_index", _Call(lambda x, i: x.gather(0, i)), (_values(7, 13), torch.randint(0, 7, (3, 9)))),
        SampleCase("rank5_negative_dim", _Call(lambda x, i: x.gather(-2, i)), (_values(2, 3, 1, 5, 3), torch.randint(0, 5, (2, 3, 1, 8, 3)))),
        SampleCase("int64_values", _Call(lambda x, i: torch.gather(x, 1, i)), (_ints(4, 6), torch.randint(0, 6, (4, 6)))),
        SampleCase("size1", _Call(lambda x, i: x.gather(0, i)), (_values(1, 1), torch.zeros(1, 1, dtype=torch.int64))),
    ]


@_seeded
def _index_tensor_samples() -> List[SampleCase]:
    i3 = lambda n, *s: torch.randint(0, n, s)
    return [
        SampleCase("dim0", _Call(lambda x, i: x[i]), (_values(7, 13), i3(7, 5))),
        SampleCase("middle_dim_2d_index", _Call(lambda x, i: x[:, i]), (_values(3, 9, 4), i3(9, 2, 5))),
        SampleCase("two_adjacent_broadcast", _Call(lambda x, i, j: x[:, i, j]), (_values(2, 5, 7, 3), i3(5, 4, 1), i3(7, 6))),
        SampleCase("two_apart_go_first", _Call(lambda x, i, j: x[i, :, j]), (_values(5, 3, 7), i3(5, 4), i3(7, 4))),
        SampleCase("negative_indices", _Call(lambda x, i: x[:, i]), (_values(3, 9), -i3(9, 6) - 1)),
        SampleCase("four_indices", _Call(lambda x, a, b, c, d: x[a, b, c, d]),
                   (_values(2, 3, 4, 5, 6), i3(2, 3), i3(3, 3), i3(4, 3), i3(5, 3))),
        SampleCase("int64_values_int32_index", _Call(lambda x, i: x[i]), (_ints(6, 4), i3(6, 3).to(torch.int32))),
        SampleCase("bool_values", _Call(lambda x, i: x[:, :, i]), (_bools(2, 3, 5), i3(5, 7))),
    ]


@_seeded
def _embedding_samples() -> List[SampleCase]:
    return [
        SampleCase("vocab_33_dim_13", torch.nn.Embedding(33, 13), (torch.randint(0, 33, (2, 7)),)),
        SampleCase("padding_idx", torch.nn.Embedding(10, 8, padding_idx=0), (torch.tensor([[0, 3, 9, 0]]),)),
        SampleCase("rank1_indices", torch.nn.Embedding(5, 3), (torch.tensor([4, 4, 0, 1]),)),
        SampleCase("rank0_index", _Call(lambda i, w: _F.embedding(i, w), _values(9, 5)), (torch.tensor(7),)),
        SampleCase("rank7_indices", torch.nn.Embedding(6, 2), (torch.randint(0, 6, (2, 1, 2, 1, 3, 1, 2)),)),
        SampleCase("int32_indices", torch.nn.Embedding(17, 33), (torch.randint(0, 17, (5,), dtype=torch.int32),)),
    ]


@_seeded
def _full_samples() -> List[SampleCase]:
    # No tensor inputs: these fold to constants at preprocess.
    return [
        SampleCase("full_plus_input", _Call(lambda x: x + torch.full((7, 13), 2.5)), (_values(7, 13),)),
        SampleCase("zeros_broadcast", _Call(lambda x: x * 2 + torch.zeros(13)), (_values(7, 13),)),
        SampleCase("ones_int64", _Call(lambda x: x + torch.ones(3, 1, dtype=torch.int64)), (_ints(3, 5),)),
    ]


@_seeded
def _full_like_samples() -> List[SampleCase]:
    # Of an input: these reach the runtime.
    return [
        SampleCase("full_like_7x13", _Call(lambda x: torch.full_like(x, -3.25)), (_values(7, 13),)),
        SampleCase("zeros_like_plus", _Call(lambda x: torch.zeros_like(x) + x), (_values(2, 3, 1, 5),)),
        SampleCase("ones_like_rank8", _Call(torch.ones_like), (_values(2, 1, 2, 3, 1, 2, 1, 3),)),
        SampleCase("ones_like_int64", _Call(lambda x: torch.ones_like(x) + x), (_ints(5, 7),)),
        SampleCase("full_like_bool", _Call(lambda x: torch.full_like(x, True)), (_bools(4, 3),)),
        SampleCase("full_like_to_int64", _Call(lambda x: torch.full_like(x, 7, dtype=torch.int64)), (_values(3, 5),)),
        SampleCase("rank0", _Call(lambda x: torch.full_like(x, 1e30)), (_values(),)),
    ]


@_seeded
def _arange_samples() -> List[SampleCase]:
    return [
        SampleCase("int_end_13", _Call(lambda x: x + torch.arange(13)), (_ints(7, 13),)),
        SampleCase("float_step", _Call(lambda x: x * torch.arange(-1.0, 2.25, 0.25)), (_values(2, 13),)),
        SampleCase("start_end_step", _Call(lambda x: x - torch.arange(3, 40, 3)), (_ints(13),)),
    ]


@_seeded
def _scalar_tensor_samples() -> List[SampleCase]:
    return [
        SampleCase("float", _Call(lambda x: x + torch.scalar_tensor(3.5)), (_values(7, 13),)),
        SampleCase("int64", _Call(lambda x: x * torch.scalar_tensor(-4, dtype=torch.int64)), (_ints(5),)),
    ]


def _sdpa(**kwargs) -> Callable:
    return lambda q, k, v, *mask: _F.scaled_dot_product_attention(q, k, v, *mask, **kwargs)


@_seeded
def _sdpa_samples() -> List[SampleCase]:
    qkv = lambda b, h, l, s, e, hk=None, ev=None: (
        _values(b, h, l, e), _values(b, hk or h, s, e), _values(b, hk or h, s, ev or e))
    return [
        SampleCase("no_mask_2x3x7x16", _Call(_sdpa()), qkv(2, 3, 7, 7, 16)),
        SampleCase("cross_L5_S13_Ev9", _Call(_sdpa()), qkv(1, 2, 5, 13, 8, ev=9)),
        SampleCase("causal_33", _Call(_sdpa(is_causal=True)), qkv(1, 2, 33, 33, 8)),
        SampleCase("causal_S_larger", _Call(_sdpa(is_causal=True)), qkv(2, 1, 5, 9, 4)),
        # More keys than one block of the kernel (64): the online softmax rescales.
        SampleCase("long_S_150_wide", _Call(_sdpa()), (_wide(1, 2, 3, 8), _wide(1, 2, 150, 8), _values(1, 2, 150, 8))),
        SampleCase("scale_0.3", _Call(_sdpa(scale=0.3)), qkv(2, 2, 4, 6, 8)),
        SampleCase("float_mask_broadcast", _Call(_sdpa()), qkv(2, 3, 5, 7, 8) + (_values(1, 5, 7),)),
        SampleCase("float_mask_neg_inf", _Call(_sdpa()),
                   qkv(2, 2, 4, 6, 8) + (torch.where(torch.rand(2, 1, 4, 6) < 0.3, float("-inf"), 0.0),)),
        SampleCase("bool_mask_with_empty_row", _Call(_sdpa()),
                   qkv(2, 2, 4, 70, 8) + (torch.cat([torch.zeros(1, 70, dtype=torch.bool), _bools(3, 70)]),)),
        SampleCase("gqa_8_heads_2_kv", _Call(_sdpa(enable_gqa=True, is_causal=True)), qkv(2, 8, 9, 9, 16, hk=2)),
        SampleCase("rank3", _Call(_sdpa()), (_values(3, 7, 8), _values(3, 5, 8), _values(3, 5, 4))),
        SampleCase("head_dim_256", _Call(_sdpa()), qkv(1, 1, 3, 5, 256)),
        SampleCase("rank5", _Call(_sdpa(is_causal=True)), (_values(2, 1, 2, 5, 4),) * 3),
    ]


@_seeded
def _rms_norm_samples() -> List[SampleCase]:
    return [
        SampleCase("module_7x13", torch.nn.RMSNorm(13), (_values(7, 13),)),
        SampleCase("eps_none_no_weight", _Call(lambda x: _F.rms_norm(x, (33,))), (_values(2, 9, 33),)),
        SampleCase("two_dims_eps", torch.nn.RMSNorm([5, 7], eps=1e-3), (_values(3, 5, 7),)),
        SampleCase("random_weight_rank5", _Call(lambda x, w: _F.rms_norm(x, (3,), w, 1e-6), _values(3)), (_values(2, 1, 3, 2, 3),)),
        SampleCase("size1_rows_wide", torch.nn.RMSNorm(300), (_wide(1, 1, 300),)),
    ]


# ----------------------------------------------------------------------------
# The entries

_ELEMENTWISE = "Elementwise; ranks 0-8."
_BINARY = ("Elementwise with broadcasting; ranks 0-8; a Python scalar operand becomes a constant; "
           "operands of one dtype (no type promotion).")
# ----------------------------------------------------------------------------
# pt2e family: static int8 from PT2E (quant/pt2e.py's VulkanQuantizer).
# Standalone quantize/dequantize kernels, and the et_vk.vkd_q8ta_* ops that
# backends/q8ta_fusion.py fuses dq -> conv2d | linear | add -> [relu] -> q into.
# Which quantized patterns run is decided by quant/q8ta_patterns.py (asked for
# every node in OpRegistry.lookup), shared with the fusion pass.
import torch.ao.quantization.fx._decomposed  # noqa: E402,F401  (defines quantized_decomposed ops)

from vkdelegate.quant import q8ta_ops  # noqa: E402,F401  (defines et_vk.vkd_q8ta_*)
from vkdelegate.quant.q8ta_patterns import per_tensor_qparams, pattern_reason  # noqa: E402

quantized_decomposed = exir_ops.edge.quantized_decomposed
et_vk = exir_ops.edge.et_vk
_Q8_ACTIVATIONS = frozenset({torch.float32, torch.int8})
_Q8_WEIGHTS = frozenset({torch.float32, torch.int8, torch.int32, torch.int64})
_Q8_NOTES = " int8 is stored as int32 on the GPU (packing 4 per word is a later optimization)."
_Q8_WEIGHTED = (" Exact int32 accumulation, requantized in float32 with the per-channel scale, round half to even;"
                " a relu or hardtanh before the quantize becomes the output range.")


def _check_per_tensor(node: Node) -> Optional[str]:
    return per_tensor_qparams(node)[1]


def _int8(*sizes: int) -> torch.Tensor:
    return torch.randint(-128, 128, sizes, dtype=torch.int8)


class _Q8Weighted(torch.nn.Module):
    """An int8 conv2d or linear: et_vk.vkd_q8ta_* called directly, or (pattern=True) as PT2E's
    dequantize -> float op -> quantize that the fusion pass rewrites into it."""

    def __init__(self, x: torch.Tensor, out_channels: int, kernel=None, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, relu=False, pattern=False):
        super().__init__()
        self.conv = kernel is not None
        in_channels = x.shape[1] if self.conv else x.shape[-1]
        shape = (out_channels, in_channels // groups, kernel, kernel) if self.conv else (out_channels, in_channels)
        self.register_buffer("weight", torch.randint(-127, 128, shape, dtype=torch.int8))
        self.register_buffer("scales", torch.rand(out_channels) * 0.01 + 0.002)
        self.register_buffer("zero_points", torch.zeros(out_channels, dtype=torch.int64))
        self.register_buffer("bias", torch.randn(out_channels) if bias else None)
        self.conv_args = [[stride] * 2, [padding] * 2, [dilation] * 2, groups]
        self.x_qparams = (0.05, 3)
        self.relu, self.pattern = relu, pattern
        # The output scale covers the float result of the sample input, so that few values clamp.
        self.out_qparams = (1.0, 0)
        reach = self._float(q8ta_ops._dequantize(x, *self.x_qparams)).abs().max().item()
        self.out_qparams = (max(reach, 1e-3) / 100.0, -5)

    def _float(self, x: torch.Tensor) -> torch.Tensor:
        weight = q8ta_ops._dequantize_weight(self.weight, self.scales, self.zero_points)
        if self.conv:
            return torch.nn.functional.conv2d(x, weight, self.bias, *self.conv_args)
        return torch.nn.functional.linear(x, weight, self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out_scale, out_zero_point = self.out_qparams
        if self.pattern:
            ops = torch.ops.quantized_decomposed
            xf = ops.dequantize_per_tensor(x, *self.x_qparams, -128, 127, torch.int8)
            weight = ops.dequantize_per_channel(self.weight, self.scales, self.zero_points, 0, -127, 127, torch.int8)
            if self.conv:
                y = torch.nn.functional.conv2d(xf, weight, self.bias, *self.conv_args)
            else:
                y = torch.nn.functional.linear(xf, weight, self.bias)
            if self.relu:
                y = torch.relu(y)
            return ops.quantize_per_tensor(y, out_scale, out_zero_point, -128, 127, torch.int8)
        out_min = out_zero_point if self.relu else -128
        weights = (self.weight, self.scales, self.zero_points, self.bias)
        if self.conv:
            return torch.ops.et_vk.vkd_q8ta_conv2d(x, *self.x_qparams, *weights, *self.conv_args,
                                                   out_scale, out_zero_point, out_min, 127)
        return torch.ops.et_vk.vkd_q8ta_linear(x, *self.x_qparams, *weights, out_scale, out_zero_point, out_min, 127)


def _q8_conv_cases(pattern: bool) -> List[SampleCase]:
    cases = [
        ("3x3_pad1_bias_batch2", _int8(2, 3, 7, 9), dict(out_channels=5, kernel=3, padding=1)),
        ("stride2_dilation2_relu", _int8(1, 4, 13, 11), dict(out_channels=7, kernel=3, stride=2, dilation=2, relu=True)),
        ("depthwise_3x3_s2_p1", _int8(2, 8, 9, 9), dict(out_channels=8, kernel=3, stride=2, padding=1, groups=8)),
        ("depthwise_multiplier2_relu", _int8(1, 4, 7, 5), dict(out_channels=8, kernel=3, groups=4, bias=False, relu=True)),
        ("pointwise_16_to_33", _int8(1, 16, 5, 7), dict(out_channels=33, kernel=1)),
        ("groups2_size1_input", _int8(1, 6, 1, 1), dict(out_channels=4, kernel=1, groups=2)),
    ]
    return [SampleCase(case_id, _Q8Weighted(x, pattern=pattern, **kw), (x,)) for case_id, x, kw in cases]


def _q8_linear_cases(pattern: bool) -> List[SampleCase]:
    cases = [
        ("2d_bias", _int8(3, 33), dict(out_channels=13)),
        ("3d_relu_no_bias", _int8(2, 5, 16), dict(out_channels=7, bias=False, relu=True)),
        ("1d", _int8(7), dict(out_channels=1)),
        ("4d", _int8(2, 1, 3, 9), dict(out_channels=5)),
    ]
    return [SampleCase(case_id, _Q8Weighted(x, pattern=pattern, **kw), (x,)) for case_id, x, kw in cases]


@_seeded
def _q8_pattern_samples() -> List[SampleCase]:
    return ([SampleCase("conv2d_" + c.case_id, c.module, c.inputs) for c in _q8_conv_cases(True)]
            + [SampleCase("linear_" + c.case_id, c.module, c.inputs) for c in _q8_linear_cases(True)])


@_seeded
def _quantize_samples() -> List[SampleCase]:
    ops = torch.ops.quantized_decomposed
    return [
        SampleCase("int8_clamps", _Call(lambda x: ops.quantize_per_tensor(x, 0.02, 3, -128, 127, torch.int8)),
                   (_values(2, 7, 13) * 2.0,)),
        SampleCase("narrow_range_rank5", _Call(lambda x: ops.quantize_per_tensor(x, 0.1, -4, -100, 100, torch.int8)),
                   (_wide(1, 3, 1, 5, 2),)),
        # Exact halves: round half to even, like torch.round.
        SampleCase("halves", _Call(lambda x: ops.quantize_per_tensor(x, 0.5, 0, -128, 127, torch.int8)),
                   (torch.arange(-9, 10, dtype=torch.float32) * 0.25,)),
    ]


@_seeded
def _dequantize_samples() -> List[SampleCase]:
    ops = torch.ops.quantized_decomposed
    return [
        SampleCase("int8", _Call(lambda x: ops.dequantize_per_tensor(x, 0.05, -7, -128, 127, torch.int8)),
                   (_int8(3, 33),)),
        SampleCase("rank4_zp0", _Call(lambda x: ops.dequantize_per_tensor(x, 0.003, 0, -128, 127, torch.int8)),
                   (_int8(2, 1, 5, 7),)),
    ]


class _Q8Add(torch.nn.Module):
    def __init__(self, relu: bool):
        super().__init__()
        self.relu = relu

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.ops.et_vk.vkd_q8ta_add(a, 0.05, 3, b, 0.02, -10, 0.08, -5, -5 if self.relu else -128, 127)


@_seeded
def _q8_conv2d_samples() -> List[SampleCase]:
    return _q8_conv_cases(False)


@_seeded
def _q8_linear_samples() -> List[SampleCase]:
    return _q8_linear_cases(False)


@_seeded
def _q8_add_samples() -> List[SampleCase]:
    return [
        SampleCase("same_shape", _Q8Add(False), (_int8(2, 3, 7, 5), _int8(2, 3, 7, 5))),
        SampleCase("relu_broadcast", _Q8Add(True), (_int8(2, 3, 7, 5), _int8(3, 1, 5))),
        SampleCase("rank1_size1", _Q8Add(True), (_int8(13), _int8(1))),
    ]


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
            _BINARY + " True division on float32 and float16.",
            check=_check_binary,
        ),
        OpEntry("relu", (aten.relu.default,), _seeded(lambda: _unary_cases(torch.relu) + _int_cases(torch.relu)),
                _ELEMENTWISE, dtypes=NUMERIC),
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
            lambda: _clamp_samples() + _clamp_int_samples(),
            _ELEMENTWISE + " min, max or both; int or float bounds on float32, int bounds on integer tensors.",
            dtypes=NUMERIC,
            check=_check_clamp,
        ),
        OpEntry("hardtanh", (aten.hardtanh.default,), _hardtanh_samples, _ELEMENTWISE, check=_check_clamp),
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
        OpEntry("select_copy", (aten.select_copy.int,), _select_samples,
                "Negative index allowed; the index may be symbolic (dynamic shapes), the dim may not." + _INT_STORAGE,
                dtypes=ANY_DTYPE, check=_check_static_dim_step, symint_args=True),
        OpEntry("slice_copy", (aten.slice_copy.Tensor,), _slice_samples,
                "Positive steps; start/end may be negative, and symbolic (dynamic shapes); dim and step may not."
                + _INT_STORAGE, dtypes=ANY_DTYPE, check=_check_static_dim_step, symint_args=True),
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
            lambda: _to_copy_samples() + _convert_samples(),
            "Conversions between float32, float16, int32, int64 and bool with contiguous dim order (float to int "
            "truncates; to bool tests != 0); conversions of constants are folded by preprocess." + _INT_STORAGE,
            dtypes=ANY_DTYPE,
            check=_check_to_copy,
            aliases_input=True,
        ),
        OpEntry("alias_copy", (aten.alias_copy.default,), _alias_copy_samples, "A copy." + _INT_STORAGE, dtypes=ANY_DTYPE,
                aliases_input=True),
        # --- elementwise family: math, activations, comparisons, logical/bitwise, where,
        # reductions (dtype conversions are the to_copy entry above) ---
        OpEntry("div_rounding", (aten.div.Tensor_mode,), _div_mode_samples,
                _BINARY + " rounding_mode 'trunc' and 'floor' on float32 and integers (as torch, floor division "
                "by 0 gives inf/NaN on floats); None (true division) on float32 and float16.",
                dtypes=NUMERIC, check=_check_div),
        OpEntry("pow", (aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar), _pow_samples,
                _BINARY + " IEEE special cases as torch; integer powers by repeated multiplication "
                "(negative integer exponents of integers give 0 unless the base is +-1).",
                dtypes=NUMERIC, check=_check_binary, kind="transcendental"),
        OpEntry("minimum", (aten.minimum.default,), _seeded(lambda: _minmax_cases(torch.minimum)),
                _BINARY + " NaN propagates.", dtypes=NUMERIC, check=_check_binary),
        OpEntry("maximum", (aten.maximum.default,), _seeded(lambda: _minmax_cases(torch.maximum)),
                _BINARY + " NaN propagates.", dtypes=NUMERIC, check=_check_binary),
        OpEntry("where", (aten.where.self,), _where_samples,
                "Broadcasts condition, self and other; bool condition; self and other of one dtype." + _INT_STORAGE,
                dtypes=ANY_DTYPE, check=_check_where),
        OpEntry("comparison",
                tuple(getattr(aten, op).Tensor for op in ("eq", "ne", "lt", "le", "gt", "ge"))
                + tuple(getattr(aten, op).Scalar for op in ("eq", "ne", "lt", "le", "gt", "ge")),
                _seeded(lambda: [case for fn in (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge)
                                 for case in _named(fn, _compare_cases(fn))
                                 if fn in (torch.eq, torch.lt) or "scalar" in case.case_id]),
                "eq, ne, lt, le, gt, ge: .Tensor with broadcasting and .Scalar; operands of one dtype, bool "
                "output; integer scalars with integer tensors." + _INT_STORAGE,
                dtypes=ANY_DTYPE, check=_check_compare),
        OpEntry("logical",
                (aten.logical_and.default, aten.logical_or.default, aten.logical_xor.default),
                _seeded(lambda: [case for fn in (torch.logical_and, torch.logical_or, torch.logical_xor)
                                 for case in _named(fn, _logical_cases(fn))]),
                "Broadcasting; operands of one dtype (nonzero is true), bool output." + _INT_STORAGE,
                dtypes=ANY_DTYPE, check=_check_compare),
        OpEntry("logical_not", (aten.logical_not.default,), _not_samples(torch.logical_not, floats=True),
                _ELEMENTWISE + " bool output." + _INT_STORAGE, dtypes=ANY_DTYPE),
        OpEntry("bitwise",
                (aten.bitwise_and.Tensor, aten.bitwise_or.Tensor, aten.bitwise_xor.Tensor),
                _seeded(lambda: [case for fn in (torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor)
                                 for case in _named(fn, _bitwise_cases(fn))]),
                "and, or, xor with broadcasting on integer and bool tensors of one dtype." + _INT_STORAGE,
                dtypes=frozenset({torch.int32, torch.int64, torch.bool}), check=_check_binary),
        OpEntry("bitwise_not", (aten.bitwise_not.default,), _not_samples(torch.bitwise_not, floats=False),
                _ELEMENTWISE + " integer and bool tensors." + _INT_STORAGE,
                dtypes=frozenset({torch.int32, torch.int64, torch.bool})),
        OpEntry("neg", (aten.neg.default,),
                _seeded(lambda: _math_cases(torch.neg) + _int_cases(torch.neg)), _ELEMENTWISE, dtypes=NUMERIC),
        OpEntry("abs", (aten.abs.default,),
                _seeded(lambda: _math_cases(torch.abs) + _int_cases(torch.abs)), _ELEMENTWISE, dtypes=NUMERIC),
        OpEntry("sign", (aten.sign.default,),
                _seeded(lambda: _math_cases(torch.sign) + _int_cases(torch.sign)), _ELEMENTWISE, dtypes=NUMERIC),
        OpEntry("exp", (aten.exp.default,), _seeded(lambda: _math_cases(torch.exp)), _ELEMENTWISE,
                kind="transcendental"),
        OpEntry("log", (aten.log.default,), _seeded(lambda: _math_cases(torch.log, _positive)),
                _ELEMENTWISE + " log(0) = -inf, log(x < 0) = NaN.", kind="transcendental"),
        OpEntry("log10", (aten.log10.default,), _seeded(lambda: _math_cases(torch.log10, _positive)),
                _ELEMENTWISE, kind="transcendental"),
        OpEntry("sqrt", (aten.sqrt.default,), _seeded(lambda: _math_cases(torch.sqrt, _positive)),
                _ELEMENTWISE + " sqrt(x < 0) = NaN.", kind="transcendental"),
        OpEntry("rsqrt", (aten.rsqrt.default,), _seeded(lambda: _math_cases(torch.rsqrt, _positive)),
                _ELEMENTWISE + " rsqrt(0) = inf.", kind="transcendental"),
        OpEntry("reciprocal", (aten.reciprocal.default,), _seeded(lambda: _math_cases(torch.reciprocal, _nonzero)),
                _ELEMENTWISE, kind="transcendental"),
        OpEntry("sin", (aten.sin.default,), _seeded(lambda: _math_cases(torch.sin)),
                _ELEMENTWISE + " The device's sin (accuracy as the Vulkan driver gives).", kind="transcendental"),
        OpEntry("cos", (aten.cos.default,), _seeded(lambda: _math_cases(torch.cos)),
                _ELEMENTWISE + " The device's cos (accuracy as the Vulkan driver gives).", kind="transcendental"),
        OpEntry("round", (aten.round.default,),
                _seeded(lambda: _math_cases(torch.round) + [
                    SampleCase("halves", _Call(torch.round), (torch.arange(-10, 11) * 0.5,))]),
                _ELEMENTWISE + " Halves to even, as torch; decimals=0 only."),
        OpEntry("erf", (aten.erf.default,), _seeded(lambda: _math_cases(torch.erf)),
                _ELEMENTWISE + " |error| < 1.2e-7.", kind="transcendental"),
        OpEntry("silu", (aten.silu.default,), _seeded(lambda: _math_cases(torch.nn.functional.silu)),
                _ELEMENTWISE + " Kept from decomposition.", keep_undecomposed=True, kind="transcendental"),
        OpEntry("hardswish", (aten.hardswish.default,),
                _seeded(lambda: _math_cases(torch.nn.functional.hardswish, nan=False)),
                _ELEMENTWISE + " Kept from decomposition.", keep_undecomposed=True),
        OpEntry("hardsigmoid", (aten.hardsigmoid.default,),
                _seeded(lambda: _math_cases(torch.nn.functional.hardsigmoid, nan=False)),
                _ELEMENTWISE + " Kept from decomposition.", keep_undecomposed=True),
        OpEntry("leaky_relu", (aten.leaky_relu.default,),
                _seeded(lambda: _math_cases(torch.nn.functional.leaky_relu)
                        + [SampleCase("slope_0.2", _Call(lambda x: torch.nn.functional.leaky_relu(x, 0.2)),
                                      (_values(7, 13),))]),
                _ELEMENTWISE, keep_undecomposed=True),
        OpEntry("softplus", (aten.softplus.default,),
                _seeded(lambda: _math_cases(torch.nn.functional.softplus)
                        + [SampleCase("beta2_threshold5",
                                      _Call(lambda x: torch.nn.functional.softplus(x, 2.0, 5.0)), (_wide(7, 13),))]),
                _ELEMENTWISE + " beta (nonzero) and threshold; kept from decomposition.",
                check=_check_softplus, keep_undecomposed=True, kind="transcendental"),
        OpEntry("elu", (aten.elu.default,),
                _seeded(lambda: _math_cases(torch.nn.functional.elu)
                        + [SampleCase("alpha_scale_input_scale",
                                      _Call(lambda x: torch.ops.aten.elu(x, 0.5, 1.5, 2.0)), (_values(7, 13),))]),
                _ELEMENTWISE + " alpha, scale, input_scale.", keep_undecomposed=True, kind="transcendental"),
        OpEntry("sum", (aten.sum.dim_IntList,), _sum_samples,
                "Over any dims (an empty list: all), keepdim; float32, or integers/bool giving int64; "
                "no dtype conversion." + _INT_STORAGE,
                dtypes=ANY_DTYPE, check=_check_sum, kind="reduction"),
        OpEntry("mean", (aten.mean.dim, aten.mean.default), _mean_samples,
                "Over any dims (an empty list: all), keepdim; float32 and float16.", check=_check_same_dtype, kind="reduction"),
        OpEntry("amax", (aten.amax.default,), _minmax_reduce_samples(torch.amax),
                "Over any dims (an empty list: all), keepdim; NaN propagates.", dtypes=NUMERIC,
                check=_check_same_dtype, kind="reduction"),
        OpEntry("amin", (aten.amin.default,), _minmax_reduce_samples(torch.amin),
                "Over any dims (an empty list: all), keepdim; NaN propagates.", dtypes=NUMERIC,
                check=_check_same_dtype, kind="reduction"),
        OpEntry("argmax", (aten.argmax.default,), _arg_reduce_samples(torch.argmax),
                "One dim or the flattened input; keepdim; ties give the first index, NaN counts as the "
                "largest; int64 output stored as int32.", dtypes=NUMERIC, kind="reduction"),
        OpEntry("argmin", (aten.argmin.default,), _arg_reduce_samples(torch.argmin),
                "One dim or the flattened input; keepdim; ties give the first index, NaN counts as the "
                "smallest; int64 output stored as int32.", dtypes=NUMERIC, kind="reduction"),
        OpEntry("max_dim", (aten.max.dim,), _max_dim_samples(torch.max),
                "Values and indices along one dim; keepdim; ties give the first index, NaN propagates; "
                "indices int64 stored as int32.", dtypes=NUMERIC, kind="reduction"),
        OpEntry("min_dim", (aten.min.dim,), _max_dim_samples(torch.min),
                "Values and indices along one dim; keepdim; ties give the first index, NaN propagates; "
                "indices int64 stored as int32.", dtypes=NUMERIC, kind="reduction"),
        OpEntry("var", (aten.var.correction,), _var_samples,
                "Over any dims (None: all), keepdim, any correction (std exports as var + sqrt); "
                "two passes around the mean.", kind="reduction"),
        # ---- cnn family: convolution, pooling, upsampling, normalization, cat
        OpEntry("cat", (aten.cat.default,), _cat_samples,
                "Any dim, any number of inputs, ranks 1-8; inputs of the output's dtype." + _INT_STORAGE,
                dtypes=ANY_DTYPE, check=_check_cat),
        OpEntry("convolution", (aten.convolution.default,), _convolution_samples,
                "1-D and 2-D (rank 3 or 4 input); any stride, padding, dilation, groups (depthwise too); "
                "optional bias; transposed with output_padding; any batch size. 3-D is not supported.",
                check=_check_convolution, kind="matmul"),
        # perf family
        OpEntry("conv2d_clamp", (conv2d_clamp_op() and exir_ops.edge.et_vk.vkd_conv2d_clamp.default,), _conv2d_clamp_samples,
                "et_vk.vkd_conv2d_clamp: a convolution (not transposed) whose output is clamped to [min, max]; "
                "optional residual of the output's sizes added before the clamp; made at preprocess from "
                "conv [+ add] + relu / hardtanh / clamp (batch norm folded in first).",
                check=_check_conv2d_clamp, kind="matmul"),
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
        OpEntry("grid_sampler_2d", (aten.grid_sampler_2d.default,), _grid_sampler_samples,
                "Bilinear and nearest (not bicubic); zeros, border and reflection padding; align_corners both ways.",
                check=_check_grid_sampler),
        # Transformer family: shape and data movement, indexing, creation,
        # embedding, attention, rms_norm.
        OpEntry(
            "split_with_sizes_copy",
            (aten.split_with_sizes_copy.default,),
            _split_samples,
            "What split and chunk export to; one slice per output; static sizes, so no resize." + _INT_STORAGE,
            dtypes=ANY_DTYPE,
            supports_resize=False,
        ),
        OpEntry("repeat", (aten.repeat.default,), _repeat_samples, "Output rank up to 8." + _INT_STORAGE,
                dtypes=ANY_DTYPE),
        OpEntry("flip", (aten.flip.default,), _flip_samples, "Any dims; ranks 0-8." + _INT_STORAGE, dtypes=ANY_DTYPE),
        OpEntry(
            "constant_pad_nd",
            (aten.constant_pad_nd.default,),
            _pad_samples,
            "What F.pad(mode='constant') exports to; negative pads crop; int fill values must fit int32." + _INT_STORAGE,
            dtypes=ANY_DTYPE,
            check=_check_constant_pad,
        ),
        OpEntry("roll", (aten.roll.default,), _roll_samples,
                "Kept from decomposition (which needs fmod); any dims, or flattened without dims." + _INT_STORAGE,
                dtypes=ANY_DTYPE, keep_undecomposed=True),
        OpEntry("unfold_copy", (aten.unfold_copy.default,), _unfold_samples,
                "Tensor.unfold; input rank 1-7." + _INT_STORAGE, dtypes=ANY_DTYPE, check=_check_unfold),
        OpEntry(
            "index_select",
            (aten.index_select.default,),
            _index_select_samples,
            "int32/int64 0-d or 1-D index; negative indices count from the end. Along dim 0, an input larger "
            "than one binding's maxStorageBufferRange is read in windows of rows." + _INT_STORAGE,
            dtypes=ANY_DTYPE,
            check=_check_index_select,
        ),
        OpEntry("gather", (aten.gather.default,), _gather_samples,
                "int32/int64 index of the input's rank." + _INT_STORAGE, dtypes=ANY_DTYPE, check=_check_gather),
        OpEntry(
            "index",
            (aten.index.Tensor,),
            _index_tensor_samples,
            "Advanced indexing with 1-4 int32/int64 index tensors (broadcast) and None entries; no boolean masks."
            + _INT_STORAGE,
            dtypes=ANY_DTYPE,
            check=_check_index_tensor,
        ),
        OpEntry("embedding", (aten.embedding.default,), _embedding_samples,
                "2-D weight; int32/int64 indices of any rank up to 7. A weight larger than one binding's "
                "maxStorageBufferRange is read in windows of rows." + _INT_STORAGE, dtypes=ANY_DTYPE,
                check=_check_embedding),
        OpEntry("full", (aten.full.default,), _full_samples,
                "Also zeros and ones; without tensor inputs it folds to a constant at preprocess." + _INT_STORAGE,
                dtypes=ANY_DTYPE, check=_check_full),
        OpEntry("full_like", (aten.full_like.default,), _full_like_samples,
                "Also zeros_like and ones_like; any output dtype; contiguous memory format." + _INT_STORAGE,
                dtypes=ANY_DTYPE, check=_check_fill_like),
        OpEntry("arange", (aten.arange.start_step,), _arange_samples,
                "Folds to a constant at preprocess; float, int32 and int64." + _INT_STORAGE, dtypes=NUMERIC,
                check=_check_arange),
        # The edge graph keeps scalar_tensor as an ATen op (ExecuTorch does not wrap it).
        OpEntry("scalar_tensor", (torch.ops.aten.scalar_tensor.default,), _scalar_tensor_samples,
                "Folds to a constant at preprocess." + _INT_STORAGE, dtypes=ANY_DTYPE),
        OpEntry(
            "scaled_dot_product_attention",
            (aten.scaled_dot_product_attention.default,),
            _sdpa_samples,
            "Kept from decomposition; one fused kernel with an online softmax. float32 or float16 q/k/v of rank 2-8, "
            "head dims up to 256; is_causal, a float or bool attn_mask (broadcast), scale, enable_gqa; "
            "dropout_p=0 only; fully masked rows give 0 like PyTorch.",
            dtypes=frozenset({torch.float32, torch.bool}),
            check=_check_sdpa,
            keep_undecomposed=True,
            kind="matmul",
        ),
        OpEntry(
            "rms_norm",
            (aten.rms_norm.default,),
            _rms_norm_samples,
            "Kept from decomposition; fused, one workgroup per row; optional weight; eps=None is float32's epsilon.",
            check=_check_rms_norm,
            keep_undecomposed=True,
            kind="reduction",
        ),
        # ---- pt2e family: static int8 from PT2E (VulkanQuantizer)
        OpEntry("quantize_per_tensor", (quantized_decomposed.quantize_per_tensor.default,), _quantize_samples,
                "Static int8: clamp(round(x / scale) + zero_point, quant_min, quant_max), round half to even; "
                "literal scale and zero point." + _Q8_NOTES, dtypes=_Q8_ACTIVATIONS, check=_check_per_tensor),
        OpEntry("dequantize_per_tensor", (quantized_decomposed.dequantize_per_tensor.default,), _dequantize_samples,
                "int8 to float32: (x - zero_point) * scale; literal scale and zero point." + _Q8_NOTES,
                dtypes=_Q8_ACTIVATIONS, check=_check_per_tensor),
        OpEntry("dequantize_per_channel", (quantized_decomposed.dequantize_per_channel.default,), _q8_pattern_samples,
                "Only as the int8 weight (axis 0) of a conv2d or linear that fuses into et_vk.vkd_q8ta_conv2d or "
                "vkd_q8ta_linear; the fusion pass consumes it (no kernel of its own)." + _Q8_NOTES,
                dtypes=_Q8_WEIGHTS, kind="quantized", fused=True),
        OpEntry("vkd_q8ta_conv2d", (et_vk.vkd_q8ta_conv2d.default,), _q8_conv2d_samples,
                "PT2E dq -> conv2d -> [relu | hardtanh] -> q fused: int8 NCHW in and out, per-channel int8 weights, any stride, "
                "padding, dilation and groups (depthwise too), optional float bias." + _Q8_WEIGHTED + _Q8_NOTES,
                dtypes=_Q8_WEIGHTS, kind="quantized"),
        OpEntry("vkd_q8ta_linear", (et_vk.vkd_q8ta_linear.default,), _q8_linear_samples,
                "PT2E dq -> linear -> [relu | hardtanh] -> q fused: int8 input of rank 1-8, per-channel int8 weights, optional "
                "float bias." + _Q8_WEIGHTED + _Q8_NOTES, dtypes=_Q8_WEIGHTS, kind="quantized"),
        OpEntry("vkd_q8ta_add", (et_vk.vkd_q8ta_add.default,), _q8_add_samples,
                "PT2E dq, dq -> add -> [relu | hardtanh] -> q fused: int8 operands with their own scales, broadcast, "
                "rank <= 8; dequantized and added in float32 like the CPU, then requantized."
                + _Q8_NOTES, dtypes=_Q8_ACTIVATIONS, kind="quantized"),
    ]
)


# ----------------------------------------------------------------------------
# qlinear family: torchao weight-only and dynamic-activation quantized linear and
# quantized embedding, fused into et_vk ops by backends/torchao_fusion.py. The
# torchao ops are accepted only inside patterns that the fusion pass rewrites.
from vkdelegate.quant import torchao_ops as _qops  # noqa: E402  (defines the et_vk ops)
from vkdelegate.quant import torchao_samples as _qsamples  # noqa: E402

_QUANT_DTYPES = frozenset({torch.float32, torch.int8, torch.int32, torch.int64})
_QSCHEMES = ("4-bit (packed 8 per int32 word, dequantized in the shader) or 8-bit signed weights, "
             "per-group along K (group size a multiple of 8 for 4-bit, 4 for 8-bit) or per-row (PerAxis(0)); "
             "symmetric or with int zero points; float32 scales.")


def _check_fused_linear(node: Node) -> Optional[str]:
    x, packed, scales, zeros, bias = (node.args + (None,) * 5)[:5]
    bits, group_size = node.args[5], node.args[6]
    if bits not in (4, 8):
        return f"bits={bits}: only 4 and 8 are supported"
    xv, pv = fake_tensor(x), fake_tensor(packed)
    if pv is None or pv.dim() != 2 or pv.dtype != torch.int32:
        return "the packed weight must be a 2-D int32 tensor"
    k = xv.shape[-1] if xv is not None and xv.dim() >= 1 else None
    if not isinstance(k, int) or group_size <= 0 or k % group_size or (group_size != k and group_size % (32 // bits)):
        return f"group size {group_size} must divide K and be a multiple of {32 // bits} (or equal K)"
    return None


def _check_fused_embedding(node: Node) -> Optional[str]:
    bits, group_size, dim = node.args[4], node.args[5], node.args[6]
    if bits not in (4, 8):
        return f"bits={bits}: only 4 and 8 are supported"
    if group_size <= 0 or dim % group_size or (group_size != dim and group_size % (32 // bits)):
        return f"group size {group_size} must divide {dim} and be a multiple of {32 // bits} (or equal it)"
    return None


def _torchao_entries() -> List[OpEntry]:
    try:
        import torchao.quantization.quant_primitives  # noqa: F401  (registers the torchao ops)
    except ImportError:
        return []
    torchao = exir_ops.edge.torchao
    return [
        OpEntry("torchao_dequantize_affine", (torchao.dequantize_affine.default,),
                lambda: _qsamples.linear_samples(False) + _qsamples.embedding_samples(),
                "Only as the weight of a linear or embedding (IntxWeightOnlyConfig, "
                "Int8DynamicActivationIntxWeightConfig), or a per-token int8 activation feeding such a linear; "
                "fused into et_vk.vkd_linear_qw / vkd_linear_dq8a_qw / vkd_embedding_qw. " + _QSCHEMES,
                dtypes=_QUANT_DTYPES, check=_qops.fusion_reason, fused=True, kind="matmul"),
        OpEntry("torchao_quantize_affine", (torchao.quantize_affine.default,),
                lambda: _qsamples.linear_samples(True)[:4],
                "Only per-token int8 asymmetric activations of a fused vkd_linear_dq8a_qw.",
                dtypes=_QUANT_DTYPES, check=_qops.activation_fusion_reason, fused=True, kind="matmul"),
        OpEntry("torchao_choose_qparams_affine", (torchao.choose_qparams_affine.default,),
                lambda: _qsamples.linear_samples(True)[4:],
                "Only per-token int8 asymmetric activations of a fused vkd_linear_dq8a_qw.",
                dtypes=_QUANT_DTYPES, check=_qops.activation_fusion_reason, fused=True, kind="matmul"),
    ]


REGISTRY = OpRegistry(REGISTRY.entries + tuple(_torchao_entries()) + (
    OpEntry("vkd_linear_qw", (exir_ops.edge.et_vk.vkd_linear_qw.default,),
            lambda: _qsamples.fused_op_samples("vkd_linear_qw"),
            "Weight-only quantized linear: x [..., K] float32 times dequantized weight [N, K], optional bias. "
            + _QSCHEMES + " A GEMV kernel for M <= 4 rows, a tiled one above.",
            dtypes=_QUANT_DTYPES, check=_check_fused_linear, kind="matmul"),
    OpEntry("vkd_linear_dq8a_qw", (exir_ops.edge.et_vk.vkd_linear_dq8a_qw.default,),
            lambda: _qsamples.fused_op_samples("vkd_linear_dq8a_qw"),
            "Dynamic int8 activations (asymmetric, per token, quantized on the GPU inside the op) times "
            "quantized weights, integer dot products accumulated in int32 per group. " + _QSCHEMES,
            dtypes=_QUANT_DTYPES, check=_check_fused_linear, kind="matmul"),
    OpEntry("vkd_embedding_qw", (exir_ops.edge.et_vk.vkd_embedding_qw.default,),
            lambda: _qsamples.fused_op_samples("vkd_embedding_qw"),
            "Quantized embedding: rows gathered and dequantized in the shader; int32/int64 indices of rank up "
            "to 7. " + _QSCHEMES,
            dtypes=_QUANT_DTYPES, check=_check_fused_embedding, kind="matmul"),
))
# ---------------------------------------------------------------------------- end qlinear family


# ----------------------------------------------------------------------------
# gguf family: linear on raw GGUF blocks (quant/gguf_linear.py, runtime/ops/gguf_linear.cpp)

from vkdelegate.quant import gguf_linear as _gguf  # noqa: E402  (defines et_vk.vkd_linear_gguf)


def _check_linear_gguf(node: Node) -> Optional[str]:
    ggml_type, n, k = arg(node, "ggml_type"), arg(node, "n"), arg(node, "k")
    error = _gguf.shape_error(ggml_type, n, k)
    if error:
        return error
    x, weight, bias = fake_tensor(arg(node, "x")), fake_tensor(arg(node, "weight")), arg(node, "bias")
    if x.dtype != torch.float32:
        return f"input is {x.dtype}; float32 only"
    if x.dim() < 1 or x.shape[-1] != k:
        return f"input's last dim is not K={k}"
    if weight.dtype != torch.int32 or weight.numel() * 4 < _gguf.weight_nbytes(ggml_type, n, k):
        return "weight must be int32 words holding the GGUF blocks (GGUFLinear packs them)"
    if bias is not None and (fake_tensor(bias).dtype != torch.float32 or tuple(fake_tensor(bias).shape) != (n,)):
        return f"bias must be float32 of shape ({n},)"
    return None


class _GGUFLinearCase(torch.nn.Module):
    def __init__(self, fmt: str, n: int, k: int, bias: bool):
        super().__init__()
        ggml_type = _gguf.FORMATS_BY_NAME[fmt].ggml_type
        self.linear = _gguf.GGUFLinear(_gguf.random_blocks(ggml_type, n, k).reshape(-1), ggml_type, n, k,
                                       torch.randn(n) if bias else None)

    def forward(self, x):
        return self.linear(x)


@_seeded
def _linear_gguf_samples() -> List[SampleCase]:
    # (format, x sizes, N, bias): M <= 4 takes the GEMV path, larger M the tiled one;
    # odd N; K a multiple of the block size (32, or 256 for the K-quants).
    shapes = [
        ("Q4_0", (1, 64), 13, False), ("Q4_0", (2, 19, 96), 33, True),
        ("Q8_0", (3, 32), 7, True), ("Q8_0", (37, 160), 45, False),
        ("Q4_K", (1, 1, 512), 13, False), ("Q4_K", (33, 256), 35, True),
        ("Q6_K", (4, 256), 9, True), ("Q6_K", (2, 17, 512), 33, False),
    ]
    return [
        SampleCase(f"{fmt}_x{'x'.join(map(str, sizes))}_n{n}" + ("_bias" if bias else ""),
                   _GGUFLinearCase(fmt, n, sizes[-1], bias), (torch.randn(*sizes),))
        for fmt, sizes, n, bias in shapes
    ]


_GGUF_ENTRIES = [
    OpEntry(
        "linear_gguf",
        (exir_ops.edge.et_vk.vkd_linear_gguf.default,),
        _linear_gguf_samples,
        "GGUF Q4_0, Q8_0, Q4_K, Q6_K weights read in their block layouts (vkdelegate.gguf); "
        "K a multiple of 32 (Q4_0, Q8_0) or 256 (Q4_K, Q6_K); float32 input, optional bias; weight as int32 words.",
        dtypes=frozenset({torch.float32, torch.int32}),
        check=_check_linear_gguf,
        kind="matmul",
    ),
]
REGISTRY = OpRegistry(list(REGISTRY) + _GGUF_ENTRIES)
# ---------------------------------------------------------------------------- end of gguf family
# fp16 family: the entries whose kernels have f16 variants (half storage, math in
# float, one rounding on store, as PyTorch computes half) also run float16. The runtime needs the float tensors of a node
# in one dtype, so mixed float32/float16 nodes stay on CPU (to_copy converts).


def _check_one_float_dtype(node: Node) -> Optional[str]:
    floats = _tensor_dtypes(node) & _FLOATS
    if len(floats) > 1:
        return "mixed float32 and float16 tensors are not supported"
    return None


# Named, not derived: an entry added later runs float16 only once its kernels have f16 variants.
_FLOAT16_ENTRIES = frozenset({
    "abs", "adaptive_avg_pool2d", "add", "addmm", "alias_copy", "amax", "amin", "arange", "argmax", "argmin",
    "avg_pool2d", "batch_norm_inference", "bmm", "cat", "clamp", "clone", "comparison", "constant_pad_nd",
    "conv2d_clamp", "convolution", "cos", "div", "div_rounding", "elu", "embedding", "erf", "exp", "expand_copy", "flip",
    "full", "full_like", "gather", "gelu", "grid_sampler_2d", "hardsigmoid", "hardswish", "hardtanh", "index",
    "index_select", "leaky_relu", "linear", "log", "log10", "log_softmax", "logical", "logical_not",
    "max_dim", "max_pool2d_with_indices", "maximum", "mean", "min_dim", "minimum", "mm", "mul",
    "native_group_norm", "native_layer_norm", "neg", "permute_copy", "pixel_shuffle", "pixel_unshuffle",
    "pow", "reciprocal", "relu", "repeat", "rms_norm", "roll", "round", "rsqrt", "scalar_tensor",
    "scaled_dot_product_attention", "select_copy", "sigmoid", "sign", "silu", "sin", "slice_copy", "softmax",
    "softplus", "split_with_sizes_copy", "sqrt", "squeeze_copy", "sub", "sum", "tanh", "to_copy",
    "unfold_copy", "unsqueeze_copy", "upsample_bilinear2d", "upsample_nearest2d", "var", "view_copy", "where",
})


def _with_float16(entry: OpEntry) -> OpEntry:
    if entry.name not in _FLOAT16_ENTRIES:
        return entry
    check = entry.check
    if entry.name != "to_copy":
        def check(node: Node, entry_check: Check = entry.check) -> Optional[str]:
            return _check_one_float_dtype(node) or entry_check(node)
    return dataclasses.replace(entry, dtypes=entry.dtypes | {torch.float16}, check=check)


REGISTRY = OpRegistry([_with_float16(entry) for entry in REGISTRY])


def lookup(node: Node) -> Tuple[Optional[OpEntry], Optional[str]]:
    return REGISTRY.lookup(node)


def aliasing_op_names() -> FrozenSet[str]:
    """Op names whose runtime output is a view of their first argument (see OpEntry.aliases_input)."""
    return frozenset(name for entry in REGISTRY if entry.aliases_input for name in entry.op_names)


def registered_op_names() -> List[str]:
    """Every op name ("aten.add.Tensor", ...) the partitioner may put in a blob's chain."""
    return [name for entry in REGISTRY if not entry.fused for name in entry.op_names]
