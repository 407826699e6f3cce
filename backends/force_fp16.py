"""force_fp16: a float32 partition runs in float16 on the GPU.

Every float32 tensor inside the partition becomes float16: user inputs are cast
at entry, weights are cast by a `_to_copy` on their constant node (the builder
folds it, so only half weights are stored), the fake values (`meta["val"]`) of
every node and float32 `dtype` arguments (full, arange, _to_copy, ...) become
float16, and float outputs are cast back, so the partition's boundary stays
float32. Integer, bool and scalar values stay as they are. State (a mutable
buffer the partition owns, such as a KV cache) is float16 itself: it is
updated in place, so it is not cast (preprocess stores its initial value in half).
"""
from typing import Any, Dict

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..op_registry import REGISTRY

_TO_COPY = exir_ops.edge.aten._to_copy.default


def _half(value: Any) -> Any:
    """value (a fake tensor, or a tuple/list of them) with float32 tensors as float16."""
    if isinstance(value, torch.Tensor):
        return value.to(torch.float16) if value.dtype == torch.float32 else value
    if isinstance(value, (tuple, list)):
        return type(value)(_half(v) for v in value)
    return value


def _is_float32(node: Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.dtype == torch.float32


def _cast(graph, node: Node, dtype: torch.dtype, before: Node) -> Node:
    with graph.inserting_before(before):
        cast = graph.call_function(_TO_COPY, (node,), {"dtype": dtype})
    cast.meta["val"] = node.meta["val"].to(dtype)
    return cast


def force_fp16(program: ExportedProgram, options: Dict) -> None:
    if not options.get("force_fp16"):
        return
    graph = program.graph_module.graph
    nodes = list(graph.nodes)
    first_op = next((n for n in nodes if n.op != "placeholder"), None)
    signature = program.graph_signature
    mutated = set(signature.buffers_to_mutate.values())
    state = {name for name, target in signature.inputs_to_buffers.items() if target in mutated}
    updates = set(signature.buffers_to_mutate)
    float32_outputs = {item for item in nodes[-1].args[0]
                       if isinstance(item, Node) and _is_float32(item) and item.name not in updates}
    for node in nodes:
        if node.op == "placeholder" and node.name in state:
            node.meta["val"] = _half(node.meta["val"])
        elif node.op == "placeholder" and _is_float32(node):
            users = list(node.users)
            if users:
                cast = _cast(graph, node, torch.float16, first_op)
                for user in users:
                    user.replace_input_with(node, cast)
        elif node.op == "call_function":
            entry = REGISTRY.entry_for(node.target)
            if entry is not None and torch.float16 not in entry.dtypes and (
                    _is_float32(node) or any(_is_float32(a) for a in node.all_input_nodes)):
                raise ValueError(f"force_fp16: {node.name} ({node.target}) does not run in float16; "
                                 "lower this model without force_fp16")
            node.kwargs = {k: torch.float16 if v is torch.float32 else v for k, v in node.kwargs.items()}
            node.args = tuple(torch.float16 if a is torch.float32 else a for a in node.args)
            if "val" in node.meta:
                node.meta["val"] = _half(node.meta["val"])
        elif node.op == "output":
            # Outputs that were float32 go back to float32 (the boundary keeps its dtypes).
            node.args = (type(node.args[0])(
                _cast(graph, item, torch.float32, node) if item in float32_outputs else item
                for item in node.args[0]),)
