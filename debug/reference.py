"""A CPU reference executor of the serialized graph: the blob the runtime loads, run op by op
with PyTorch.

No op has a hand-written reference here. Each OpCall of the chain names an op overload
("aten.convolution.default", "et_vk.vkd_rope.default"); its arguments are rebuilt from that
overload's schema (positional and kwarg-only, tensors, optional tensors, tensor lists with
their None entries, scalars, lists, dtypes, SymInts) and the overload is called. Our fused
`et_vk` ops resolve the same way: quant/library.py registers each with its eager reference
(CompositeExplicitAutograd), the one implementation export also uses. Only the chain's
SymInt arithmetic ("sym.add", ...: the Python operators export records) has a table here.

    graph = ReferenceGraph(blob)
    outputs = graph.run([x])               # torch tensors, the graph's outputs in order
    graph.values[i]                        # every value of the last run, by value id
"""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from ..fx_nodes import SYMINT_OPS
from ..serialization.blob import deserialize_blob
from ..serialization.graph_ir import (
    BoolListValue,
    BoolValue,
    DoubleListValue,
    DoubleValue,
    GraphIR,
    IntListValue,
    IntValue,
    NullValue,
    OpCall,
    StringValue,
    SymIntValue,
    TensorValue,
    ValueListValue,
)
from ..serialization.torch_dtypes import SCHEMA_DTYPES

TORCH_DTYPES = {code: dtype for dtype, code in SCHEMA_DTYPES.items()}


# (ReferenceError is Python's weakref error: ours has its own name.)
class GraphReferenceError(ValueError):
    """A blob the reference executor cannot run, or an op whose result contradicts the blob; the
    message names the op (its chain index and name)."""


# The chain's SymInt ops that are Python operators ("sym.add": operator.add), not op overloads.
SYMINT_FUNCTIONS: Dict[str, Callable[..., int]] = {
    name: target for target, name in SYMINT_OPS.items() if not isinstance(target, torch._ops.OpOverload)}


def _import_op_libraries() -> None:
    # The modules that define our et_vk ops (with their eager references); the registry
    # imports them all.
    from .. import op_registry  # noqa: F401


def resolve_op(name: str) -> Callable:
    """The callable for a chain op name: a SymInt operator, or a torch op overload
    "namespace.op.overload". Raises GraphReferenceError for any other name."""
    if name in SYMINT_FUNCTIONS:
        return SYMINT_FUNCTIONS[name]
    _import_op_libraries()
    parts = name.split(".")
    if len(parts) == 3:
        namespace, op, overload = parts
        try:
            return getattr(getattr(getattr(torch.ops, namespace), op), overload)
        except (AttributeError, RuntimeError):
            pass
    raise GraphReferenceError(
        f"op '{name}' has no reference: it is neither an op overload registered with torch "
        f"(torch.ops.<namespace>.<op>.<overload>) nor a SymInt operator ({', '.join(SYMINT_FUNCTIONS)})")


def constant_tensor(graph: GraphIR, value: TensorValue) -> torch.Tensor:
    data = bytearray(graph.constants[value.constant_id])
    flat = torch.frombuffer(data, dtype=TORCH_DTYPES[value.dtype]) if data else torch.empty(
        0, dtype=TORCH_DTYPES[value.dtype])
    return flat.reshape(value.sizes)


def _is_dtype_argument(argument: torch.Argument) -> bool:
    # The blob stores a dtype argument as its schema code (vulkan_preprocess._scalar_value);
    # the schema's `type` says int for ScalarType, `real_type` says ScalarType.
    return str(argument.real_type) in ("ScalarType", "Optional[ScalarType]")


class ReferenceGraph:
    """One blob's graph, run on the CPU with PyTorch. State tensors (KV caches) start from
    their constants (zeros without) and carry over from one run to the next, as on the GPU."""

    def __init__(self, blob_or_graph: Union[bytes, GraphIR]):
        self.graph = blob_or_graph if isinstance(blob_or_graph, GraphIR) else deserialize_blob(blob_or_graph)
        self.ops: List[Callable] = []
        for index, call in enumerate(self.graph.chain):
            op = resolve_op(call.name)
            self._check_arity(index, call, op)
            self.ops.append(op)
        self.state: Dict[int, torch.Tensor] = {}
        for value_id, value in enumerate(self.graph.values):
            if isinstance(value, TensorValue) and value.state:
                self.state[value_id] = (constant_tensor(self.graph, value).clone() if value.constant_id >= 0
                                        else torch.zeros(value.sizes, dtype=TORCH_DTYPES[value.dtype]))
        # (state value id, id of the output that holds it after the run): the op that updates a
        # state tensor returns the update, which the runtime writes in place (op_registry's
        # state_update_positions, as ComputeGraph::alias_state).
        self.state_updates: List[Tuple[int, int]] = self._state_updates()
        self.values: Dict[int, Any] = {}

    def describe(self, index: int) -> str:
        return f"op #{index} ({self.graph.chain[index].name})"

    def _check_arity(self, index: int, call: OpCall, op: Callable) -> None:
        schema = getattr(op, "_schema", None)
        if schema is None:
            return
        num_inputs = len(call.args) - call.num_outputs
        # A Tensor[] result is one output per element.
        returns_list = len(schema.returns) == 1 and isinstance(schema.returns[0].type, torch.ListType)
        if num_inputs != len(schema.arguments) or (call.num_outputs != len(schema.returns) and not returns_list):
            raise GraphReferenceError(
                f"{self.describe(index)}: the blob gives {num_inputs} arguments and {call.num_outputs} outputs, "
                f"its schema has {len(schema.arguments)} and {len(schema.returns)}: {schema}")

    def _state_updates(self) -> List[Tuple[int, int]]:
        from ..op_registry import state_update_positions

        updates = []
        for call in self.graph.chain:
            num_inputs = len(call.args) - call.num_outputs
            for position, output in state_update_positions(call.name):
                state_id = call.args[position]
                if state_id in self.state:
                    updates.append((state_id, call.args[num_inputs + output]))
        return updates

    # ---- running

    def run(self, inputs: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        """The graph's outputs for these inputs; self.values then holds every value of the run."""
        graph = self.graph
        if len(inputs) != len(graph.input_ids):
            raise GraphReferenceError(f"the graph takes {len(graph.input_ids)} inputs, got {len(inputs)}")
        env: Dict[int, Any] = {}
        for position, (value_id, tensor) in enumerate(zip(graph.input_ids, inputs)):
            env[value_id] = self._check_input(position, graph.values[value_id], torch.as_tensor(tensor))
        for value_id, value in enumerate(graph.values):
            if isinstance(value, TensorValue) and value.state:
                env[value_id] = self.state[value_id]
            elif isinstance(value, TensorValue) and value.constant_id >= 0:
                env[value_id] = constant_tensor(graph, value)
        self.values = env
        for index, (call, op) in enumerate(zip(graph.chain, self.ops)):
            self._run_op(index, call, op, env)
        for state_id, output_id in self.state_updates:
            self.state[state_id] = env[output_id]
        return [env[value_id] for value_id in graph.output_ids]

    def run_op(self, index: int, env: Dict[int, Any]) -> List[Any]:
        """Op `index` of the chain alone, on the values of env (value id -> tensor or int), which
        it extends with its outputs; returns them."""
        return self._run_op(index, self.graph.chain[index], self.ops[index], env)

    def _check_input(self, position: int, value: TensorValue, tensor: torch.Tensor) -> torch.Tensor:
        dtype = TORCH_DTYPES[value.dtype]
        if tensor.dtype != dtype:
            raise GraphReferenceError(f"input {position} has dtype {tensor.dtype}, the graph takes {dtype}")
        sizes, low = tuple(tensor.shape), value.min_sizes or (0,) * len(value.sizes)
        if len(sizes) != len(value.sizes) or any(not lo <= s <= hi for s, lo, hi in zip(sizes, low, value.sizes)):
            raise GraphReferenceError(
                f"input {position} has sizes {list(sizes)}, the graph takes sizes from {list(low)} to "
                f"{list(value.sizes)}")
        return tensor

    def _argument(self, index: int, argument: Optional[torch.Argument], value_id: int, env: Dict[int, Any]) -> Any:
        value = self.graph.values[value_id]
        if isinstance(value, (TensorValue, SymIntValue)):
            if value_id not in env:
                raise GraphReferenceError(f"{self.describe(index)} reads value {value_id} before any op writes it")
            return env[value_id]
        if isinstance(value, NullValue):
            return None
        if isinstance(value, IntValue):
            if argument is not None and _is_dtype_argument(argument):
                if value.value not in TORCH_DTYPES:
                    raise GraphReferenceError(f"{self.describe(index)}: unknown dtype code {value.value}")
                return TORCH_DTYPES[value.value]
            return value.value
        if isinstance(value, (DoubleValue, BoolValue, StringValue)):
            return value.value
        if isinstance(value, (IntListValue, DoubleListValue, BoolListValue)):
            return list(value.items)
        if isinstance(value, ValueListValue):
            # Tensor[], Tensor?[] (Null entries: None), or a SymInt[] of Int and SymInt values.
            return [self._argument(index, None, item, env) for item in value.items]
        raise GraphReferenceError(f"{self.describe(index)}: cannot read value {value_id} ({type(value).__name__})")

    def _run_op(self, index: int, call: OpCall, op: Callable, env: Dict[int, Any]) -> List[Any]:
        num_inputs = len(call.args) - call.num_outputs
        input_ids, output_ids = call.args[:num_inputs], call.args[num_inputs:]
        schema = getattr(op, "_schema", None)
        if schema is None:  # a SymInt operator: its operands in order
            args = [self._argument(index, None, value_id, env) for value_id in input_ids]
            kwargs = {}
        else:
            args, kwargs = [], {}
            for argument, value_id in zip(schema.arguments, input_ids):
                item = self._argument(index, argument, value_id, env)
                if argument.alias_info is not None and argument.alias_info.is_write and isinstance(item, torch.Tensor):
                    item = item.clone()  # values stay as their op wrote them
                if argument.kwarg_only:
                    kwargs[argument.name] = item
                else:
                    args.append(item)
        try:
            result = op(*args, **kwargs)
        except Exception as error:
            raise GraphReferenceError(f"{self.describe(index)} failed on the CPU: {type(error).__name__}: "
                                      f"{str(error).splitlines()[0] if str(error) else ''}") from error
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(results) != len(output_ids):
            raise GraphReferenceError(f"{self.describe(index)} returned {len(results)} values, the blob has "
                                      f"{len(output_ids)} outputs")
        for value_id, out in zip(output_ids, results):
            self._check_output(index, value_id, out)
            env[value_id] = out
        return results

    def _check_output(self, index: int, value_id: int, out: Any) -> None:
        value = self.graph.values[value_id]
        if isinstance(value, TensorValue):
            ok = isinstance(out, torch.Tensor) and out.dtype == TORCH_DTYPES[value.dtype] and out.dim() == len(
                value.sizes) and all(s <= hi for s, hi in zip(out.shape, value.sizes))
            if not ok:
                got = f"{out.dtype} {list(out.shape)}" if isinstance(out, torch.Tensor) else repr(out)
                raise GraphReferenceError(
                    f"{self.describe(index)}: output value {value_id} is {got}, the blob says "
                    f"{TORCH_DTYPES[value.dtype]} of at most {list(value.sizes)}")
        elif isinstance(value, SymIntValue) and not isinstance(out, int):
            raise GraphReferenceError(f"{self.describe(index)}: output value {value_id} should be an int, got {out!r}")


def run_blob(blob: bytes, inputs: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    """The outputs of one run of the blob's graph on these inputs, on the CPU."""
    return ReferenceGraph(blob).run(inputs)
