"""VkDelegateBackend.preprocess: turns a partition's edge program into a vkdelegate blob.

Steps: fold constant subexpressions; constants and user inputs become tensor
values (inputs carry their lower bound sizes); a mutable buffer that the
partition owns (a KV cache, see the partitioner) becomes a state tensor, which
its in-place update writes and the partition never outputs; every other call_function node
becomes an OpCall whose args are all of its op's schema arguments, then its
outputs; nodes computing symbolic ints (sym_size, SymInt arithmetic) become
OpCalls that output SymInt values, which SymInt[] arguments refer to; the output node names the
graph outputs; memory planning lets intermediates share allocations
(memory_planning.py); serialization/blob.py writes the result.

Profiling: the result's debug handle map gives each op of the blob's chain, keyed
"<op> (node <chain index>)" (the runtime's ETDump event names begin with that), the
debug handles of the edge nodes it computes, the ones that fusion passes folded into
it included, so that ExecuTorch's Inspector shows each GPU dispatch beside its ATen ops.
"""

import json
import operator
from collections import defaultdict
from typing import Any, Dict, List, Sequence, Set, Tuple

import torch
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx import Node

from ..compile_options import from_compile_specs
from ..fx_nodes import (
    SYMINT_OPS,
    is_symint,
    is_symint_op,
    lower_bound_sizes,
    node_inputs,
    op_name,
    output_tensors,
    schema_arguments,
    upper_bound_int,
    upper_bound_sizes,
)
from ..op_registry import REGISTRY, aliasing_op_names, state_update_positions, state_updates
from ..serialization.blob import serialize_graph
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
from ..serialization.torch_dtypes import schema_dtype
from .memory_planning import plan_memory
from .passes import run_passes

_CONSTANT_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)


class VkDelegateBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program: ExportedProgram, compile_specs: List[CompileSpec]) -> PreprocessResult:
        options = from_compile_specs(compile_specs)
        graph, debug_handle_map = _build(edge_program, options)
        graph.options = [f"{key}={json.dumps(value)}" for key, value in sorted(options.items())]
        return PreprocessResult(processed_bytes=serialize_graph(graph), debug_handle_map=debug_handle_map)


def build_graph(edge_program: ExportedProgram, options: Dict = None) -> GraphIR:
    """The memory-planned GraphIR of one partition (its options field left empty)."""
    return _build(edge_program, options)[0]


def delegate_event_key(op: str, chain_index: int) -> str:
    """The debug handle map's key of the chain's op `chain_index`. runtime/backend/backend.cpp
    names each dispatch's ETDump event with this key and its shader after a space."""
    return f"{op} (node {chain_index})"


def _build(edge_program: ExportedProgram, options: Dict = None) -> Tuple[GraphIR, Dict[str, Tuple[int, ...]]]:
    """The memory-planned GraphIR and its debug handle map (delegate_event_key -> handles)."""
    origins = _Origins(edge_program.graph_module)
    try:
        run_passes(edge_program, options or {})
    finally:
        origins.stop()
    builder = _GraphBuilder(edge_program)
    graph = builder.build()
    aliasing = aliasing_op_names()
    plan_memory(graph, lambda name: name in aliasing, state_update_positions)
    handles = origins.handles()
    debug_handle_map = {}
    for index, (call, node) in enumerate(zip(graph.chain, builder.chain_nodes)):
        found = set(handles.get(node, ()))
        for user in node.users:  # a multi-output op's getitems
            if user.target is operator.getitem:
                found |= handles.get(user, set())
        if found:
            debug_handle_map[delegate_event_key(call.name, index)] = tuple(sorted(found))
    return graph, debug_handle_map


def _node_handles(node: Node) -> Set[int]:
    handle = node.meta.get("debug_handle")
    if handle is None:
        return set()
    return {int(item) for item in handle} if isinstance(handle, (list, tuple)) else {int(handle)}


class _Origins:
    """Which edge nodes' debug handles each node left by the passes computes.

    A node the passes leave keeps its handle. A node a fusion erased counts for the
    node that replaced it (replace_all_uses_with), and an erased node that nothing
    replaced (inside a fused pattern) for what its users count for, so a fused op
    gets the handles of every node of its pattern.
    """

    def __init__(self, graph_module: torch.fx.GraphModule):
        self.module = graph_module
        self.original = [node for node in graph_module.graph.nodes if node.op == "call_function"]
        self.users = {node: list(node.users) for node in self.original}
        self.by_name = {node.name: node for node in graph_module.graph.nodes}
        self.replaced: Dict[Node, str] = {}
        # torch.fx's hooks on a graph module (replacements, new nodes); without them
        # (another torch), fused ops keep only handles their passes copied.
        self.hooked = hasattr(graph_module, "_register_replace_node_hook") and hasattr(
            graph_module, "_register_create_node_hook")
        if self.hooked:
            graph_module._register_replace_node_hook(self._on_replace)
            graph_module._register_create_node_hook(self._on_create)

    def _on_replace(self, old: Node, new: str, user: Node) -> None:
        self.replaced[old] = new

    def _on_create(self, node: Node) -> None:
        self.by_name[node.name] = node

    def stop(self) -> None:
        if self.hooked:
            self.module._unregister_replace_node_hook(self._on_replace)
            self.module._unregister_create_node_hook(self._on_create)

    def handles(self) -> Dict[Node, Set[int]]:
        alive = set(self.module.graph.nodes)
        result: Dict[Node, Set[int]] = defaultdict(set)
        for node in alive:
            result[node] |= _node_handles(node)
        memo: Dict[Node, Set[Node]] = {}

        def heirs(node: Node) -> Set[Node]:
            if node in alive:
                return {node}
            if node in memo:
                return memo[node]
            memo[node] = set()  # a cycle (a rename back and forth) ends here
            replacement = self.by_name.get(self.replaced.get(node, ""))
            found = heirs(replacement) if replacement is not None and replacement is not node else set()
            if not found:
                for user in self.users.get(node, ()):
                    found |= heirs(user)
            memo[node] = found
            return found

        for node in self.original:
            if node not in alive:
                for heir in heirs(node):
                    result[heir] |= _node_handles(node)
        return result


def constant_bytes(tensor: torch.Tensor) -> bytes:
    """The tensor's elements, contiguous, in its own dtype, as the runtime reads them."""
    flat = tensor.detach().cpu().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes()


class _GraphBuilder:
    def __init__(self, edge_program: ExportedProgram):
        self.program = edge_program
        self.graph = GraphIR()
        # The value id of each node that produced one tensor (or is a getitem of one).
        self.tensor_ids: Dict[Node, int] = {}
        # The output value ids of each multi-output node.
        self.output_ids: Dict[Node, List[int]] = {}
        # The SymInt value id of each node computing a symbolic int.
        self.symint_ids: Dict[Node, int] = {}
        # Real tensors of constant placeholders and folded nodes; they become
        # constant values only when something not folded refers to them.
        self.constant_tensors: Dict[Node, Any] = {}
        # The node of each op of graph.chain, in chain order.
        self.chain_nodes: List[Node] = []

    def build(self) -> GraphIR:
        self._check_signature()
        kinds = {spec.arg.name: spec for spec in self.program.graph_signature.input_specs}
        mutations = {spec.arg.name for spec in self.program.graph_signature.output_specs
                     if spec.kind == OutputKind.BUFFER_MUTATION}
        state_targets = set(self.program.graph_signature.buffers_to_mutate.values())
        for node in self.program.graph.nodes:
            if node.op == "placeholder":
                spec = kinds[node.name]
                if spec.kind == InputKind.BUFFER and spec.target in state_targets:
                    self.tensor_ids[node] = self._state(node, spec.target)
                elif spec.kind in _CONSTANT_KINDS:
                    self.constant_tensors[node] = self._constant(spec.target)
                elif is_symint(node):
                    raise ValueError(
                        f"{node.name}: a symbolic int input to a vkdelegate partition is not supported "
                        "(the partition should compute its sizes itself)"
                    )
                else:
                    self.tensor_ids[node] = self._new_tensor(node, with_min_sizes=True)
                    self.graph.input_ids.append(self.tensor_ids[node])
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                # A state's update stays inside: the partition does not output it.
                self.graph.output_ids = [self._tensor_id(item) for item in node.args[0]
                                         if not (isinstance(item, Node) and item.name in mutations)]
            else:
                raise ValueError(f"{node.name}: unexpected {node.op} node in a vkdelegate partition")
        return self.graph

    def _check_signature(self) -> None:
        signature = self.program.graph_signature
        if signature.user_inputs_to_mutate:
            raise ValueError("vkdelegate partitions cannot mutate their inputs")
        for spec in signature.input_specs:
            if spec.kind not in _CONSTANT_KINDS + (InputKind.USER_INPUT,):
                raise ValueError(f"input {spec.arg.name} of kind {spec.kind.name} is not supported")
        for spec in signature.output_specs:
            if spec.kind not in (OutputKind.USER_OUTPUT, OutputKind.BUFFER_MUTATION):
                raise ValueError(f"output {spec.arg.name} of kind {spec.kind.name} is not supported")
        # A buffer the partition mutates is state: its one reader is the op that
        # updates it in place (so no reader can see it before or after by mistake).
        nodes = {node.name: node for node in self.program.graph.nodes}
        placeholders = {name: target for name, target in signature.inputs_to_buffers.items()}
        for output_name, target in signature.buffers_to_mutate.items():
            update, index = nodes.get(output_name), 0
            if update is not None and update.target is operator.getitem:
                update, index = update.args  # one output of a multi-output update
            written = state_updates(update) if isinstance(update, Node) and update.op == "call_function" else []
            buffer = next((item for item, output in written if output == index), None)
            if not (isinstance(buffer, Node) and placeholders.get(buffer.name) == target and len(buffer.users) == 1):
                raise ValueError(
                    f"buffer {target} is mutated by {output_name}; a vkdelegate partition updates a buffer only "
                    "in place, through an op that alone reads it (index_put, vkd_rope_kv_update)"
                )

    def _state(self, node: Node, target: str) -> int:
        """A state tensor for the mutable buffer `target`: its initial value, zeros stored as nothing."""
        initial = self._constant(target)
        dtype = node.meta["val"].dtype  # force_fp16 makes a float32 state float16
        initial = initial.to(dtype)
        constant_id = -1 if not initial.any() else self.graph.add_constant(constant_bytes(initial))
        return self.graph.add_value(
            TensorValue(schema_dtype(dtype), tuple(initial.shape), constant_id, state=True)
        )

    def _constant(self, target: str) -> torch.Tensor:
        if target in self.program.state_dict:
            return self.program.state_dict[target]
        return self.program.constants[target]

    def _call(self, node: Node) -> None:
        if is_symint_op(node):
            args = [self._symint_operand(node, item) for item in node.args]
            out = self.graph.add_value(SymIntValue(upper_bound_int(node.meta["val"])))
            self.symint_ids[node] = out
            self.graph.chain.append(OpCall(SYMINT_OPS[node.target], tuple(args + [out])))
            self.chain_nodes.append(node)
        elif node.target is operator.getitem:
            source, index = node.args
            if source in self.constant_tensors:
                self.constant_tensors[node] = self.constant_tensors[source][index]
            else:
                self.tensor_ids[node] = self.output_ids[source][index]
        elif all(item in self.constant_tensors for item in node_inputs(node)):
            self.constant_tensors[node] = self._fold(node)
        else:
            args = [self._argument_id(node, argument, value) for argument, value in schema_arguments(node)]
            outputs = [self._new_tensor(node, index) for index in range(len(output_tensors(node)))]
            if isinstance(node.meta["val"], (list, tuple)):
                self.output_ids[node] = outputs
            else:
                self.tensor_ids[node] = outputs[0]
            self.graph.chain.append(OpCall(op_name(node.target), tuple(args + outputs), len(outputs)))
            self.chain_nodes.append(node)

    def _fold(self, node: Node) -> Any:
        """Evaluates a node whose inputs are all constants, ahead of time."""
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda item: self.constant_tensors[item])
        with torch.no_grad():
            return node.target(*args, **kwargs)

    def _symint_operand(self, node: Node, item: Any) -> int:
        """An operand of a SymInt op: a tensor (sym_size), a SymInt, or an int."""
        if isinstance(item, Node):
            if item in self.symint_ids:
                return self.symint_ids[item]
            return self._tensor_id(item)
        if isinstance(item, int) and not isinstance(item, bool):
            return self.graph.add_value(IntValue(item))
        raise ValueError(f"{node.name}: cannot serialize SymInt operand {item!r}")

    def _new_tensor(self, node: Node, index: int = 0, with_min_sizes: bool = False) -> int:
        val = output_tensors(node)[index]
        if val is None:
            # An absent optional output still takes its place in the op's args.
            return self.graph.add_value(NullValue())
        try:
            sizes = upper_bound_sizes(val)
            min_sizes = lower_bound_sizes(val) if with_min_sizes else ()
            dtype = schema_dtype(val.dtype)
        except ValueError as error:
            raise ValueError(f"{node.name}: {error}") from None
        return self.graph.add_value(TensorValue(dtype, sizes, min_sizes=min_sizes))

    def _tensor_id(self, node: Node) -> int:
        if node not in self.tensor_ids:
            if node in self.symint_ids:
                raise ValueError(
                    f"{node.name} is a symbolic int used where a tensor is expected "
                    "(a symbolic int output of a vkdelegate partition is not supported)"
                )
            if node not in self.constant_tensors:
                raise ValueError(f"{node.name} is not a tensor value of this partition")
            tensor = self.constant_tensors[node]
            constant_id = self.graph.add_constant(constant_bytes(tensor))
            value = TensorValue(schema_dtype(tensor.dtype), tuple(tensor.shape), constant_id)
            self.tensor_ids[node] = self.graph.add_value(value)
        return self.tensor_ids[node]

    def _argument_id(self, node: Node, argument: torch.Argument, value: Any) -> int:
        """The id of a new value holding one argument (tensors: the id of their existing value)."""
        if isinstance(value, Node):
            if value in self.symint_ids:
                return self.symint_ids[value]
            return self._tensor_id(value)
        if isinstance(value, (list, tuple)):
            return self.graph.add_value(self._list_value(node, argument, value))
        scalar = _scalar_value(value)
        if scalar is None:
            raise ValueError(f"{node.name}: cannot serialize argument {argument.name}={value!r}")
        return self.graph.add_value(scalar)

    def _list_value(self, node: Node, argument: torch.Argument, items: Sequence[Any]):
        element_type = _list_element_type(argument.type)
        if element_type in ("SymInt", "int") and any(isinstance(item, Node) for item in items):
            # A SymInt[] with dynamic entries: ids of SymInt and Int values.
            return ValueListValue(tuple(self._symint_operand(node, item) for item in items))
        if "Tensor" in element_type or any(isinstance(item, Node) for item in items):
            return ValueListValue(
                tuple(self.graph.add_value(NullValue()) if item is None else self._tensor_id(item) for item in items)
            )
        if element_type == "bool" or (items and all(isinstance(item, bool) for item in items)):
            return BoolListValue(tuple(bool(item) for item in items))
        if element_type == "int" or all(isinstance(item, int) for item in items):
            return IntListValue(tuple(int(item) for item in items))
        if element_type in ("float", "number"):
            return DoubleListValue(tuple(float(item) for item in items))
        raise ValueError(f"{node.name}: cannot serialize list argument {argument.name}={items!r}")


def _scalar_value(value: Any):
    if value is None or isinstance(value, (torch.memory_format, torch.layout, torch.device)):
        # Layout and placement mean nothing on the GPU side: tensors are contiguous there.
        return NullValue()
    if isinstance(value, bool):
        return BoolValue(value)
    if isinstance(value, int):
        return IntValue(value)
    if isinstance(value, float):
        return DoubleValue(value)
    if isinstance(value, str):
        return StringValue(value)
    if isinstance(value, torch.dtype):
        return IntValue(int(schema_dtype(value)))
    return None


def _list_element_type(schema_type: torch.Type) -> str:
    """"int", "float", "bool", "Tensor", "Optional[Tensor]", ... for a (possibly optional) list type."""
    if isinstance(schema_type, torch.OptionalType):
        schema_type = schema_type.getElementType()
    if isinstance(schema_type, torch.ListType):
        return str(schema_type.getElementType())
    return str(schema_type)
