"""Reading fx call_function nodes: their op name, their arguments by the op schema, their fake tensors.

Shared by the registry's argument checks, the partitioner and preprocess, which
all need "the value of argument `name`" whether the call passed it positionally,
by keyword, or left it to the schema default.
"""

import operator
from typing import Any, Dict, Iterator, List, Optional, Tuple

import sympy
import torch
from torch.fx import Node
from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

_NO_VALUE = object()


def schema_arguments(node: Node) -> List[Tuple[torch.Argument, Any]]:
    """(schema argument, value) for every argument of node's op, in schema order."""
    schema = node.target._schema
    arguments = []
    for index, argument in enumerate(schema.arguments):
        value = _NO_VALUE
        if not argument.kwarg_only and index < len(node.args):
            value = node.args[index]
        elif argument.name in node.kwargs:
            value = node.kwargs[argument.name]
        elif argument.has_default_value():
            value = argument.default_value
        if value is _NO_VALUE:
            raise ValueError(f"{node.name}: {schema.name} argument '{argument.name}' has no value")
        arguments.append((argument, value))
    return arguments


def arg(node: Node, name: str) -> Any:
    """The value node's call gives its op's argument `name` (or the schema default)."""
    for argument, value in schema_arguments(node):
        if argument.name == name:
            return value
    raise KeyError(f"{node.target} has no argument '{name}'")


def fake_tensor(node: Any) -> Optional[torch.Tensor]:
    """The fake tensor that export recorded for node, or None if it is not a tensor node."""
    if not isinstance(node, Node):
        return None
    val = node.meta.get("val")
    return val if isinstance(val, torch.Tensor) else None


def arg_at(node: Node, index: int, name: str, default: Any = None) -> Any:
    """node's argument at position `index` or keyword `name`, else `default`: for pattern
    matching, where the default is the matcher's to state (arg() reads the schema's)."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def constant_inputs(program) -> set:
    """Names of an ExportedProgram's placeholders that hold parameters, buffers or lifted constants
    (what the AOT passes may fold and pack)."""
    signature = program.graph_signature
    return set(signature.inputs_to_parameters) | set(signature.inputs_to_buffers) | set(
        signature.inputs_to_lifted_tensor_constants)


def insert_call(graph: "torch.fx.Graph", target: Any, args: tuple, before: Node,
                kwargs: Optional[Dict[str, Any]] = None) -> Node:
    """A call of target(*args, **kwargs) inserted before `before`, with the fake value
    export would have recorded for it (the passes' fused ops)."""
    from torch._guards import detect_fake_mode

    kwargs = kwargs or {}
    with graph.inserting_before(before):
        node = graph.call_function(target, tuple(args), kwargs)
    fakes = [item.meta["val"] if isinstance(item, Node) else item for item in args]
    leaves = torch.utils._pytree.tree_leaves(fakes)  # a multi-output op's value is a tuple (getitem)
    with detect_fake_mode([f for f in leaves if isinstance(f, torch.Tensor)]):
        node.meta["val"] = target(*fakes, **kwargs)
    return node


def node_inputs(node: Node) -> Iterator[Node]:
    """Every fx Node among node's args and kwargs, including those inside lists."""
    for value in (*node.args, *node.kwargs.values()):
        if isinstance(value, Node):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (item for item in value if isinstance(item, Node))


def output_tensors(node: Node) -> List[Optional[torch.Tensor]]:
    """The fake tensors node produces: one for a single-output op, one per element otherwise."""
    val = node.meta.get("val")
    if isinstance(val, (list, tuple)):
        return [item if isinstance(item, torch.Tensor) else None for item in val]
    return [val if isinstance(val, torch.Tensor) else None]


def op_name(target: Any) -> str:
    """"namespace.op.overload" of an edge or ATen op overload, e.g. "aten.add.Tensor"."""
    op = target if isinstance(target, torch._ops.OpOverload) else getattr(target, "_op", None)
    if isinstance(op, torch._ops.OpOverload):  # an edge op wraps its ATen overload in _op
        return f"{op.namespace}.{op._opname}.{op._overloadname}"
    return getattr(target, "__name__", str(target))


# Nodes computing symbolic ints (dynamic sizes and arithmetic on them), and
# their op names in the blob; the runtime recomputes them (runtime/ops/symint.cpp).
SYMINT_OPS: Dict[Any, str] = {
    torch.ops.aten.sym_size.int: "aten.sym_size.int",
    operator.add: "sym.add",
    operator.sub: "sym.sub",
    operator.mul: "sym.mul",
    operator.floordiv: "sym.floordiv",
    operator.mod: "sym.mod",
    operator.neg: "sym.neg",
}


def is_symint(value: Any) -> bool:
    """True for a node whose value is a symbolic (or plain) int, such as a sym_size node."""
    return isinstance(value, Node) and isinstance(value.meta.get("val"), (torch.SymInt, int)) and not isinstance(
        value.meta.get("val"), bool
    )


def is_symint_op(node: Node) -> bool:
    """True for a call of a SYMINT_OPS op that outputs an int."""
    return node.op == "call_function" and node.target in SYMINT_OPS and is_symint(node)


def _bound(size: Any, which: str) -> int:
    if not isinstance(size, torch.SymInt):
        return int(size)
    expr = size.node.expr
    value = getattr(size.node.shape_env.bound_sympy(expr), which)
    if not isinstance(value, sympy.Integer):
        raise ValueError(
            f"dynamic size {expr} has no {which} bound; give its torch.export.Dim a "
            + ("max (tensors are allocated at their largest size)" if which == "upper" else "min")
        )
    return int(value)


def upper_bound_int(value: Any) -> int:
    """The largest value a (symbolic) int can take."""
    return _bound(value, "upper")


def lower_bound_sizes(val: torch.Tensor) -> Tuple[int, ...]:
    """val's sizes, each symbolic size replaced by its smallest allowed value.

    While tracing, export assumes dynamic sizes are not 0 or 1, and the edge
    program records a Dim(min=1) (or min=0) as a symbol with a lower bound of
    2: the user's min is lost. Such a symbol is therefore taken to start at 1
    (the kernels run any size; 0 stays excluded).
    """
    sizes = []
    for size in val.shape:
        if not isinstance(size, torch.SymInt):
            sizes.append(int(size))
            continue
        expr = size.node.expr
        shape_env = size.node.shape_env
        ranges = {}
        for symbol in expr.free_symbols:
            bounds = shape_env.bound_sympy(symbol)
            lower = 1 if bounds.lower == 2 else bounds.lower
            ranges[symbol] = ValueRanges(lower, bounds.upper)
        lower = bound_sympy(expr, ranges).lower
        if not isinstance(lower, sympy.Integer):
            raise ValueError(f"dynamic size {expr} has no lower bound")
        sizes.append(int(lower))
    return tuple(sizes)


def upper_bound_sizes(val: torch.Tensor) -> Tuple[int, ...]:
    """val's sizes, each symbolic size replaced by the upper bound export recorded for it."""
    return tuple(_bound(size, "upper") for size in val.shape)
