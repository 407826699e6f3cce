"""Human-readable listing of a blob, for debugging:

    print(vkdelegate.serialization.dump(lowered_module.processed_bytes))
"""

from typing import List, Optional

import torch

from .blob import deserialize_blob
from .graph_ir import (
    GraphIR,
    NullValue,
    OpCall,
    SymIntValue,
    TensorValue,
    Value,
    ValueListValue,
)


def dump(blob: bytes) -> str:
    """Validates blob and lists its options, values, ops, inputs and outputs."""
    return format_graph(deserialize_blob(blob), blob_size=len(blob))


def format_graph(graph: GraphIR, blob_size: Optional[int] = None) -> str:
    constant_bytes = sum(len(data) for data in graph.constants)
    size = f", {blob_size} bytes in all" if blob_size is not None else ""
    lines = [
        f"vkdelegate graph: {len(graph.values)} values, {len(graph.chain)} ops, "
        f"{len(graph.constants)} constants ({constant_bytes} bytes){size}",
        f"options: {', '.join(graph.options) or '-'}",
        f"shared memory objects: {graph.num_mem_objs}",
        "values:",
    ]
    lines += [f"  %{value_id} = {_format_value(value)}" for value_id, value in enumerate(graph.values)]
    lines.append("ops:")
    lines += [f"  {_format_call(graph, call)}" for call in graph.chain]
    lines.append(f"inputs: {', '.join(f'%{i}' for i in graph.input_ids)}")
    lines.append(f"outputs: {', '.join(f'%{i}' for i in graph.output_ids)}")
    return "\n".join(lines)


def _format_value(value: Value) -> str:
    if isinstance(value, TensorValue):
        text = f"Tensor {value.dtype.name}{list(value.sizes)}"
        if value.constant_id != -1:
            text += f" constant {value.constant_id}"
        if value.mem_obj_id != -1:
            text += f" mem_obj {value.mem_obj_id}"
        if value.min_sizes:
            text += f" min {list(value.min_sizes)}"
        if value.state:
            text += " state"
        return text
    return f"{type(value).__name__.removesuffix('Value')} {_format_content(value)}"


def _format_content(value: Value) -> str:
    if isinstance(value, NullValue):
        return "None"
    if isinstance(value, ValueListValue):
        return "[" + ", ".join(f"%{item}" for item in value.items) + "]"
    if hasattr(value, "items"):
        return repr(list(value.items))
    return repr(value.value)


def _format_call(graph: GraphIR, call: OpCall) -> str:
    """`%out = name(arg=..., ...)`, naming arguments when torch knows the op's schema."""

    def show(value_id: int) -> str:
        if 0 <= value_id < len(graph.values) and not isinstance(graph.values[value_id], (TensorValue, SymIntValue)):
            return _format_content(graph.values[value_id])
        return f"%{value_id}"

    num_inputs = len(call.args) - call.num_outputs
    outputs = ", ".join(f"%{i}" for i in call.args[num_inputs:])
    schema = _schema(call.name)
    if schema is None or len(schema.arguments) != num_inputs:
        return f"{outputs} = {call.name}({', '.join(show(i) for i in call.args[:num_inputs])})"
    inputs = ", ".join(f"{argument.name}={show(i)}" for argument, i in zip(schema.arguments, call.args))
    return f"{outputs} = {call.name}({inputs})"


def _schema(name: str) -> Optional[torch.FunctionSchema]:
    parts: List[str] = name.split(".")
    if len(parts) != 3:
        return None
    namespace, op, overload = parts
    try:
        return getattr(getattr(getattr(torch.ops, namespace), op), overload)._schema
    except (AttributeError, RuntimeError):
        return None
